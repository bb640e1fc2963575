"""Helpers for the sticky-binding suite: a synchronous view of the gateways' table, chat calls.

    def test_x(start_gateway, table, upstream_a):  # ``table``: a TableView (conftest)
        gw = start_gateway(config(...))
        first = chat(gw, "sk-alice")
        binding = table.wait_binding(ALICE, first.headers[DEPLOYMENT])

Outcome writes (binding create/renew) run after the response is sent, so a
test that depends on a binding polls the table for it (``wait_binding``),
as a real conversation's next turn would simply come later.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx

from edgeproxy.routing.affinity import caller_id, key_digest
from edgeproxy.routing.snapshot import Binding, BindingKey, Circuit
from edgeproxy.state import items, keys
from edgeproxy.state.schema import TableSchema
from tests.fixtures.gateway import GatewayProcess, GatewayServer

DEPLOYMENT = "x-edgeproxy-deployment"
ALICE_KEY = "sk-alice-0123456789abcdef"
ALICE = caller_id(key_digest(ALICE_KEY), None, None)
WAIT_S = 5.0
POLL_S = 0.02

Gateway = GatewayServer | GatewayProcess


@dataclass
class TableView:
    """Reads of the shared state table with the synchronous boto3 client (tests only)."""

    client: Any
    name: str
    schema: TableSchema

    def _key(self, key: keys.Key) -> dict[str, Any]:
        return {self.schema.pk: {"S": key[0]}, self.schema.sk: {"S": key[1]}}

    def binding(
        self, caller: str, pool: str = "fast-chat", protocol: str = "openai.chat"
    ) -> Binding | None:
        """The stored binding (expired or not), or None."""
        key = BindingKey(caller, pool, protocol)
        found = self.client.get_item(
            TableName=self.name, Key=self._key(keys.binding_key(key)), ConsistentRead=True
        )
        item = found.get("Item")
        return items.binding_from(key, item, self.schema.ttl) if item else None

    def wait_binding(self, caller: str, deployment_id: str, pool: str = "fast-chat") -> Binding:
        """Poll until the caller's binding names ``deployment_id``."""
        deadline = time.monotonic() + WAIT_S
        while True:
            binding = self.binding(caller, pool)
            if binding is not None and binding.deployment_id == deployment_id:
                return binding
            named = binding.deployment_id if binding else None
            assert time.monotonic() < deadline, f"binding names {named}, want {deployment_id}"
            time.sleep(POLL_S)

    def wait_unbound(self, caller: str) -> None:
        """Poll until the caller has no binding."""
        deadline = time.monotonic() + WAIT_S
        while self.binding(caller) is not None:
            assert time.monotonic() < deadline, f"{caller}: binding never cleared"
            time.sleep(POLL_S)

    def scan(self) -> list[dict[str, Any]]:
        """Every item of the table."""
        found: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"TableName": self.name, "ConsistentRead": True}
        while True:
            page = self.client.scan(**kwargs)
            found.extend(page["Items"])
            if "LastEvaluatedKey" not in page:
                return found
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def bindings(self) -> list[dict[str, Any]]:
        """Every binding item (expired or not)."""
        return [i for i in self.scan() if i[self.schema.sk]["S"] == keys.BINDING]

    def successes(self, deployment_id: str) -> int:
        """Successes recorded for a deployment over every usage bucket."""
        return sum(
            items.get_int(i, "successes")
            for i in self.scan()
            if i[self.schema.pk]["S"] == keys.deployment_pk(deployment_id)
            and i[self.schema.sk]["S"].startswith(keys.USAGE_PREFIX)
        )

    def wait_successes(self, count: int, *deployment_ids: str) -> None:
        """Poll until the deployments' recorded successes add up to ``count``."""
        deadline = time.monotonic() + WAIT_S
        while sum(self.successes(d) for d in deployment_ids) < count:
            assert time.monotonic() < deadline, f"{deployment_ids}: outcomes never recorded"
            time.sleep(POLL_S)

    def wait_bound(self, caller: str) -> Binding:
        """Poll until the caller has a binding (to any deployment)."""
        deadline = time.monotonic() + WAIT_S
        while (binding := self.binding(caller)) is None:
            assert time.monotonic() < deadline, f"{caller}: never bound"
            time.sleep(POLL_S)
        return binding

    def put_circuit(self, circuit: Circuit) -> None:
        """Store a circuit as the gateway would (for a state the test cannot wait for)."""
        item = {**self._key(keys.circuit_key(circuit.deployment_id)), **items.circuit_item(circuit)}
        self.client.put_item(TableName=self.name, Item=item)


def chat(
    gateway: Gateway,
    key: str | None = ALICE_KEY,
    *,
    model: str = "fast-chat",
    image: bool = False,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    """One chat completion through ``gateway`` as the caller with ``key`` (routing metadata on)."""
    content: Any = "Hello!"
    if image:
        content = [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ]
    sent = {"x-unified-routing-metadata": "true", **(headers or {})}
    if key is not None:
        sent["authorization"] = f"Bearer {key}"
    body = {"model": model, "messages": [{"role": "user", "content": content}]}
    return httpx.post(
        gateway.base_url + "/v1/chat/completions", json=body, headers=sent, timeout=30
    )


def stream_chat(gateway: Gateway, key: str = ALICE_KEY) -> tuple[str, str]:
    """One streamed chat: (the deployment header, the whole SSE body)."""
    body = {"model": "fast-chat", "stream": True, "messages": [{"role": "user", "content": "Hi"}]}
    headers = {"authorization": f"Bearer {key}"}
    url = gateway.base_url + "/v1/chat/completions"
    with httpx.stream("POST", url, json=body, headers=headers, timeout=30) as answer:
        assert answer.status_code == 200
        return answer.headers.get(DEPLOYMENT, ""), answer.read().decode()


def served_by(answer: httpx.Response) -> str:
    """The deployment that answered (asserting the request succeeded)."""
    assert answer.status_code == 200, answer.text
    return answer.headers[DEPLOYMENT]


def attempts(answer: httpx.Response) -> list[tuple[str, bool]]:
    """(deployment, sticky) of every attempt, from the routing metadata."""
    return [(a["deployment"], a["sticky"]) for a in answer.json()["unified_routing"]["attempts"]]
