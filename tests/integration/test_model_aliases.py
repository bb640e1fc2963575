"""Model aliases through the stock openai SDK: one pool, one binding, one set of counters.

An alias resolves to its canonical model before anything else, so a key
allowed either name may call both, the caller's sticky binding and the
deployments' rpm counters are the ones of the canonical pool, ``/v1/models``
lists the alias, and a deprecated alias's answers carry RFC 9745 / 8594
headers. Aliases are set in the YAML or through ``/admin/aliases``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from edgeproxy.routing.affinity import caller_id, key_digest
from tests.fixtures.clock import FleetClock
from tests.fixtures.configs import config, deployment
from tests.fixtures.table import TableView
from tests.fixtures.upstream import MakeUpstream
from tests.integration.keys.helpers import ADMIN_KEY, ENV, bearer, create_key

HELLO = [{"role": "user", "content": "Hello!"}]
NOTICE = {
    "since": "2026-11-01T00:00:00Z",
    "sunset": "2027-03-01T00:00:00Z",
    "link": "https://example.com/models",
}
ALIASES = {
    "gpt-4-legacy": {"model": "fast-chat", "deprecation": NOTICE},
    "chat-latest": {"model": "fast-chat"},
}


_OPEN: list[openai.OpenAI] = []


@pytest.fixture(autouse=True)
def _clients_closed() -> Iterator[None]:
    """Each test's SDK clients are closed when it ends: left to the collector, their kept-alive
    sockets were reported unclosed in the next test (the gateway's build collects garbage)."""
    yield
    while _OPEN:
        _OPEN.pop().close()


def sdk(gateway: Any, key: str) -> openai.OpenAI:
    client = openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0)
    _OPEN.append(client)
    return client


def served(client: openai.OpenAI, model: str) -> tuple[str, dict[str, Any], httpx.Headers]:
    """(serving deployment, routing metadata, headers) of one chat through ``client``."""
    raw = client.chat.completions.with_raw_response.create(
        model=model, messages=HELLO, extra_headers={"x-unified-routing-metadata": "true"}
    )
    body = raw.http_response.json()
    return raw.headers["x-edgeproxy-deployment"], body["unified_routing"], raw.headers


@pytest.fixture
def two(make_upstream: MakeUpstream) -> dict[str, Any]:
    """``fast-chat`` on two equal deployments, ``other-chat`` on a third, with the aliases."""
    return config(
        deployment("a", make_upstream("a")),
        deployment("b", make_upstream("b")),
        deployment("o", make_upstream("o"), model="other-chat"),
        aliases=ALIASES,
    )


def test_an_alias_is_served_listed_and_announces_its_deprecation(
    start_gateway: Any, two: dict[str, Any]
) -> None:
    gateway = start_gateway(two, env=ENV)
    client = sdk(gateway, create_key(gateway.base_url)["key"])
    answer = client.chat.completions.with_raw_response.create(model="gpt-4-legacy", messages=HELLO)
    assert answer.parse().choices[0].message.content
    assert answer.headers["deprecation"] == "@1793491200"
    assert answer.headers["sunset"] == "Mon, 01 Mar 2027 00:00:00 GMT"
    assert answer.headers["link"] == '<https://example.com/models>; rel="deprecation"'
    for model in ("chat-latest", "fast-chat"):  # no notice configured / not an alias
        plain = client.chat.completions.with_raw_response.create(model=model, messages=HELLO)
        assert "deprecation" not in plain.headers
        assert "sunset" not in plain.headers
    with client.chat.completions.with_streaming_response.create(
        model="gpt-4-legacy", messages=HELLO, stream=True
    ) as stream:
        assert stream.headers["deprecation"] == "@1793491200"
        assert "[DONE]" in "".join(stream.iter_lines())
    listed = [m.id for m in client.models.list()]
    assert {"fast-chat", "gpt-4-legacy", "chat-latest", "other-chat"} <= set(listed)
    assert client.models.retrieve("gpt-4-legacy").id == "gpt-4-legacy"


def test_a_key_allowed_either_name_may_call_both(start_gateway: Any, two: dict[str, Any]) -> None:
    gateway = start_gateway(two, env=ENV)
    canonical_only = sdk(gateway, create_key(gateway.base_url, models=["fast-chat"])["key"])
    alias_only = sdk(gateway, create_key(gateway.base_url, models=["gpt-4-legacy"])["key"])
    other_only = sdk(gateway, create_key(gateway.base_url, models=["other-chat"])["key"])
    for client in (canonical_only, alias_only):
        for model in ("fast-chat", "gpt-4-legacy", "chat-latest"):
            assert client.chat.completions.create(model=model, messages=HELLO).choices
        assert {"fast-chat", "gpt-4-legacy", "chat-latest"} <= {m.id for m in client.models.list()}
        with pytest.raises(openai.NotFoundError):
            client.chat.completions.create(model="other-chat", messages=HELLO)
    with pytest.raises(openai.NotFoundError) as caught:
        other_only.chat.completions.create(model="gpt-4-legacy", messages=HELLO)
    assert caught.value.code == "model_not_found"
    assert "gpt-4-legacy" not in {m.id for m in other_only.models.list()}


def test_the_explainer_judges_a_key_s_models_by_every_name_as_the_edge_does(
    start_gateway: Any, two: dict[str, Any]
) -> None:
    gateway = start_gateway(two, env=ENV)
    for allowed, expected in [(["gpt-4-legacy"], True), (["other-chat"], False)]:
        created = create_key(gateway.base_url, models=allowed)
        order = {
            "path": "/v1/chat/completions",
            "body": {"model": "fast-chat", "messages": HELLO},
            "key_id": created["id"],
        }
        report = httpx.post(
            gateway.base_url + "/admin/route/explain",
            json=order,
            headers=bearer(ADMIN_KEY),
            timeout=30,
        )
        assert report.status_code == 200, report.text
        answer = httpx.post(
            gateway.base_url + "/v1/chat/completions",
            json={"model": "fast-chat", "messages": HELLO},
            headers=bearer(created["key"]),
            timeout=30,
        )
        assert (report.json()["key_allows_model"], answer.status_code) == (
            expected,
            200 if expected else 404,
        )


def test_an_alias_and_its_model_share_the_sticky_binding_across_processes(
    spawn_gateway: Any, two: dict[str, Any], table: TableView
) -> None:
    first = spawn_gateway(two, env=ENV)
    second = spawn_gateway(env=ENV)
    key = create_key(first.base_url)["key"]
    caller = caller_id(key_digest(key), None, None)
    bound, routing, _ = served(sdk(first, key), "gpt-4-legacy")
    assert [a["sticky"] for a in routing["attempts"]] == [False]
    binding = table.wait_binding(caller, bound, pool="fast-chat")  # the canonical pool's
    assert binding.deployment_id == bound
    for client, model in [(sdk(second, key), "fast-chat"), (sdk(second, key), "chat-latest")]:
        dep, routing, _ = served(client, model)
        assert dep == bound
        assert [(a["deployment"], a["sticky"]) for a in routing["attempts"]] == [(bound, True)]
    assert len(table.bindings()) == 1  # no binding of its own for an alias


def test_an_alias_and_its_model_count_against_the_same_rpm_limit(
    start_gateway: Any, make_upstream: MakeUpstream, clock: FleetClock, table: TableView
) -> None:
    gateway = start_gateway(
        config(deployment("a", make_upstream("a"), rpm_limit=3), aliases=ALIASES), env=ENV
    )
    client = sdk(gateway, create_key(gateway.base_url)["key"])
    clock.advance(60 - clock.now() % 60)  # a fresh minute bucket: the limit cannot reset midway
    for model in ("gpt-4-legacy", "fast-chat", "chat-latest"):
        assert client.chat.completions.create(model=model, messages=HELLO).choices
    for model in ("gpt-4-legacy", "fast-chat"):
        with pytest.raises(openai.RateLimitError):
            client.chat.completions.create(model=model, messages=HELLO)
    assert table.counter_at("a", "requests", int(clock.now() // 60)) == 3


def test_a_key_rpm_limit_counts_both_names(start_gateway: Any, two: dict[str, Any]) -> None:
    gateway = start_gateway(two, env=ENV)
    client = sdk(gateway, create_key(gateway.base_url, rpm_limit=2)["key"])
    assert client.chat.completions.create(model="gpt-4-legacy", messages=HELLO).choices
    assert client.chat.completions.create(model="fast-chat", messages=HELLO).choices
    with pytest.raises(openai.RateLimitError):
        client.chat.completions.create(model="chat-latest", messages=HELLO)


def admin(gateway: Any, method: str, path: str, **kwargs: Any) -> httpx.Response:
    return httpx.request(
        method, gateway.base_url + path, headers=bearer(ADMIN_KEY), timeout=30, **kwargs
    )


@pytest.mark.parametrize(
    ("name", "body", "message"),
    [
        ("old", {"model": "no-such-model"}, "names unknown model 'no-such-model'"),
        ("other-chat", {"model": "fast-chat"}, "shadows the public model 'other-chat'"),
        ("old", {"model": "chat-latest"}, "names the alias 'chat-latest'"),
        ("old", {"model": "fast-chat", "deprecation": {"sunset": "2027-01-01T00:00:00Z"}}, "since"),
        ("old", {"model": "fast-chat", "colour": "red"}, "colour"),
    ],
)
def test_the_admin_api_refuses_a_bad_alias(
    start_gateway: Any, two: dict[str, Any], name: str, body: dict[str, Any], message: str
) -> None:
    gateway = start_gateway(two, env=ENV)
    version = admin(gateway, "GET", "/admin/aliases").json()["version"]
    refused = admin(gateway, "PUT", f"/admin/aliases/{name}", json={**body, "version": version})
    assert refused.status_code == 400, refused.text
    assert message in refused.json()["error"]["message"]
    assert set(admin(gateway, "GET", "/admin/aliases").json()["aliases"]) == set(ALIASES)


def test_an_alias_set_and_removed_through_the_admin_api(
    start_gateway: Any, two: dict[str, Any]
) -> None:
    gateway = start_gateway(two, env=ENV)
    client = sdk(gateway, create_key(gateway.base_url)["key"])
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="old-chat", messages=HELLO)
    version = admin(gateway, "GET", "/admin/aliases").json()["version"]
    body = {
        "model": "other-chat",
        "deprecation": {"since": "2026-11-01T00:00:00Z"},
        "version": version,
    }
    stored = admin(gateway, "PUT", "/admin/aliases/old-chat", json=body)
    assert stored.status_code == 200, stored.text
    answer = client.chat.completions.with_raw_response.create(model="old-chat", messages=HELLO)
    assert answer.headers["x-edgeproxy-deployment"] == "o"
    assert answer.headers["deprecation"] == "@1793491200"
    audit = admin(gateway, "GET", "/admin/audit").json()["data"][0]
    assert (audit["action"], audit["target"]) == ("alias.update", "old-chat")
    removed = admin(
        gateway, "DELETE", "/admin/aliases/old-chat", params={"version": stored.json()["version"]}
    )
    assert removed.status_code == 200, removed.text
    assert "old-chat" not in removed.json()["aliases"]
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="old-chat", messages=HELLO)
