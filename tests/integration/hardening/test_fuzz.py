"""Generated hostile requests against a running gateway (hypothesis, derandomized, bounded).

Bodies (valid shapes with fuzzed fields, arbitrary JSON including NaN,
surrogates and deep nesting, raw bytes), headers and paths for every route.
Every answer must be below 500, in the route's error format (Anthropic's on
``/v1/messages``, OpenAI's elsewhere), valid JSON or valid SSE; afterwards a
normal request succeeds and nothing is left in flight.

About 400 examples in all (``deadline=None``: timing varies on shared CI).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edgeproxy import strict_json
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.gateway import GatewayServer
from tests.fixtures.sse import sse_payloads
from tests.fixtures.table import TableView
from tests.integration.hardening.helpers import (
    CHAT,
    MESSAGES,
    anthropic_error,
    config,
    deployment,
    fast_router,
    openai_error,
    wait_idle,
)

CLIENT_KEY = "sk-fuzz-client-0123456789"
ADMIN_KEY = "sk-fuzz-admin-0123456789"
EMBED = {"model": "fast-chat", "input": "hello"}
BASES = {
    "/v1/chat/completions": CHAT,
    "/v1/embeddings": EMBED,
    "/v1/messages": MESSAGES,
    "/v1/messages/count_tokens": MESSAGES,
    "/v1/responses": {"model": "fast-chat", "input": "hello", "instructions": "be brief"},
    "/v1/completions": {"model": "fast-chat", "prompt": "hello", "max_tokens": 5},
}
FIELDS = [
    "model", "messages", "stream", "max_tokens", "input", "temperature", "tools",
    "tool_choice", "system", "stop_sequences", "n", "stream_options", "content",
    "prompt", "instructions", "max_output_tokens", "previous_response_id", "text",
]  # fmt: skip


def fuzz(max_examples: int) -> Callable[[Callable[..., None]], Callable[..., None]]:
    return settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


SURROGATES = st.sampled_from(["\ud800", "\udfff", "a\udc80b", "\ud83d"])
TEXT = st.text(max_size=20) | SURROGATES
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | TEXT
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)


def encode(value: Any, ascii_only: bool) -> bytes:
    """JSON as a sloppy client writes it: NaN tokens allowed, surrogates passed through."""
    return json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")


@st.composite
def bodies(draw: st.DrawFn, base: dict[str, Any]) -> bytes:
    kind = draw(st.sampled_from(["fields", "fields", "fields", "any", "deep", "bytes"]))
    if kind == "bytes":
        return draw(st.binary(max_size=64))
    if kind == "deep":
        depth = draw(st.integers(min_value=100, max_value=3000))
        return b'{"model": "fast-chat", "x": ' + b"[" * depth + b"]" * depth + b"}"
    if kind == "any":
        return encode(draw(JSON), draw(st.booleans()))
    body = dict(base)
    for name in draw(st.lists(st.sampled_from(FIELDS), max_size=3, unique=True)):
        body[name] = draw(JSON)
    if draw(st.booleans()):
        body["messages"] = [
            {"role": draw(st.sampled_from(["user", "assistant", "tool", "system", "x"])),
             "content": draw(JSON)}
        ]  # fmt: skip
    return encode(body, draw(st.booleans()))


HEADER_TEXT = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40)
AUTH = st.sampled_from([f"Bearer {CLIENT_KEY}", f"Bearer {ADMIN_KEY}"]) | HEADER_TEXT


@pytest.fixture
def gateway(start_gateway, upstream_a: MockUpstream) -> GatewayServer:  # type: ignore[no-untyped-def]
    keys = [
        {"name": "client", "sha256": hashlib.sha256(CLIENT_KEY.encode()).hexdigest()},
        {"name": "ops", "sha256": hashlib.sha256(ADMIN_KEY.encode()).hexdigest(), "admin": True},
    ]
    return start_gateway(
        config(
            # Serving every operation fuzzed: a request no deployment may take is a 503 by spec.
            deployment("a", upstream_a, operations=["chat", "embeddings", "completions"]),
            router=fast_router(),
            gateway={"api_keys": keys},
        )
    )


def check(path: str, answer: httpx.Response) -> None:
    """No 5xx; errors in the route's format; successes valid JSON or valid SSE."""
    assert answer.status_code < 500, (path, answer.status_code, answer.text[:300])
    if answer.status_code >= 400:
        if path.rstrip("/") == "/v1/messages" or path.startswith("/v1/messages/"):
            anthropic_error(answer)
        else:
            openai_error(answer)
        return
    if answer.headers.get("content-type", "").startswith("text/event-stream"):
        sse_payloads(answer.text)  # each payload strict JSON
    else:
        strict_json.loads(answer.content)


def after(client: httpx.Client, table: TableView) -> None:
    ok = client.post(
        "/v1/chat/completions", json=CHAT, headers={"authorization": f"Bearer {CLIENT_KEY}"}
    )
    assert ok.status_code == 200
    wait_idle(table, "a")


@pytest.mark.parametrize("path", sorted(BASES))
def test_fuzzed_bodies_never_get_a_5xx(gateway: GatewayServer, table: TableView, path: str) -> None:
    with httpx.Client(base_url=gateway.base_url, timeout=30) as client:

        @fuzz(90)
        @given(
            body=bodies(BASES[path]),
            content_type=st.sampled_from(["application/json", "text/plain", ""]),
        )
        def run(body: bytes, content_type: str) -> None:
            headers = {"authorization": f"Bearer {CLIENT_KEY}", "content-type": content_type}
            check(path, client.post(path, content=body, headers=headers))

        run()
        after(client, table)


def test_fuzzed_headers_never_get_a_5xx(gateway: GatewayServer, table: TableView) -> None:
    names = ["authorization", "x-api-key", "x-route-pin", "x-unified-routing-metadata",
             "x-request-id", "x-grant-id", "anthropic-version", "content-length",
             "content-type", "x-forwarded-for", "accept"]  # fmt: skip
    with httpx.Client(base_url=gateway.base_url, timeout=30) as client:

        @fuzz(70)
        @given(
            path=st.sampled_from([*BASES, "/v1/models", "/v1/models/fast-chat/deployments"]),
            auth=AUTH,
            extra=st.dictionaries(st.sampled_from(names[1:]), HEADER_TEXT, max_size=4),
        )
        def run(path: str, auth: str, extra: dict[str, str]) -> None:
            headers = {"authorization": auth, **extra}
            headers.pop("content-length", None)  # httpx sets the real one
            method = "GET" if path.startswith("/v1/models") else "POST"
            body = json.dumps(BASES.get(path, {})).encode() if method == "POST" else None
            try:
                answer = client.request(method, path, content=body, headers=headers)
            except httpx.LocalProtocolError:
                return  # httpx refused to send it
            check(path, answer)

        run()
        after(client, table)


def test_fuzzed_paths_and_methods_never_get_a_5xx(gateway: GatewayServer, table: TableView) -> None:
    segment = st.text(
        alphabet=st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789-_.~%/"), max_size=20
    )
    with httpx.Client(base_url=gateway.base_url, timeout=30) as client:

        @fuzz(70)
        @given(
            prefix=st.sampled_from(
                ["", "/v1", "/v1/messages", "/v1/models", "/v1/chat", "/health"]
            ),
            rest=segment,
            method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"]),
        )
        def run(prefix: str, rest: str, method: str) -> None:
            path = prefix + ("/" + rest if rest else "")
            try:
                answer = client.request(
                    method, path, content=b"{}", headers={"authorization": f"Bearer {CLIENT_KEY}"}
                )
            except httpx.InvalidURL:
                return
            if method == "HEAD":
                assert answer.status_code < 500
                return
            check(answer.request.url.path, answer)

        run()
        after(client, table)
