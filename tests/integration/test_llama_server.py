"""The gateway in front of a real inference server: llama-cpp-python with SmolLM2-135M.

Two single-slot servers form one pool (``tests/fixtures/llama.py`` builds and
starts them). Such a server interrupts a running stream with ``[DONE]`` and
no finish chunk when another request arrives. Without a cap the gateway
can only report that (an anomaly on the attempt); with
``max_parallel_requests: 1`` and ``trust_stream_end: false`` no stream is
interrupted and none that is cut can pass for a complete answer.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import openai
import pytest

from edgeproxy.routing.snapshot import CircuitState
from tests.fixtures.configs import config
from tests.fixtures.llama import MODEL_ALIAS, LlamaServer
from tests.fixtures.secrets import remember
from tests.fixtures.sse import sse_events, stream_text
from tests.fixtures.table import TableView
from tests.integration.resilience.helpers import (
    CLIENT_KEY,
    deployment_status,
    keys,
    router,
)

pytestmark = pytest.mark.slow

STREAMS = 8
PATIENT = {"response_ms": 60_000, "idle_ms": 30_000, "total_ms": 120_000}
QUESTION = [{"role": "user", "content": "Write one sentence about the sea."}]


def _deployment(dep_id: str, server: LlamaServer, **fields: Any) -> dict[str, Any]:
    return {
        "id": dep_id,
        "model": "local",
        "provider": "openai_compat",
        "base_url": server.base_url,
        "upstream_model": MODEL_ALIAS,
        **fields,
    }


def _stream(base_url: str) -> httpx.Response:
    body = {"model": "local", "messages": QUESTION, "stream": True, "max_tokens": 24}
    headers = {"authorization": f"Bearer {CLIENT_KEY}", "x-unified-routing-metadata": "true"}
    return httpx.post(base_url + "/v1/chat/completions", json=body, headers=headers, timeout=180)


def _burst(base_url: str) -> list[list[Any]]:
    with ThreadPoolExecutor(STREAMS) as pool:
        answers = list(pool.map(lambda _: _stream(base_url), range(STREAMS)))
    assert all(a.status_code == 200 for a in answers), [a.text[:200] for a in answers]
    return [sse_events(a) for a in answers]


def _finish_reasons(events: list[Any]) -> list[str]:
    return [
        c["finish_reason"]
        for e in events
        if isinstance(e, dict)
        for c in e.get("choices", [])
        if c.get("finish_reason")
    ]


def _anomalies(events: list[Any]) -> list[str]:
    routing = [
        e["unified_routing"] for e in events if isinstance(e, dict) and "unified_routing" in e
    ]
    return [x for r in routing for a in r["attempts"] for x in a.get("anomalies", [])]


def _gateway(start_gateway: Any, servers: list[LlamaServer], **fields: Any) -> Any:
    deps = [_deployment(f"llama-{i}", s, **fields) for i, s in enumerate(servers)]
    cfg = config(
        *deps,
        router=router(json=PATIENT, stream=PATIENT, capacity_wait_seconds=60),
        gateway=keys(),
    )
    return start_gateway(cfg)


def test_uncapped_single_slot_servers_cut_streams_and_the_gateway_says_so(
    start_gateway: Any, llama_server: Callable[..., LlamaServer]
) -> None:
    gw = _gateway(start_gateway, [llama_server(), llama_server()])
    streams = _burst(gw.base_url)
    cut = [s for s in streams if "missing_finish_reason" in _anomalies(s)]
    assert cut, "no stream was interrupted: the premise of the capacity cap does not hold"


def test_eight_streams_over_two_capped_servers_are_all_complete(
    start_gateway: Any, llama_server: Callable[..., LlamaServer]
) -> None:
    servers = [llama_server(), llama_server()]
    gw = _gateway(start_gateway, servers, max_parallel_requests=1, trust_stream_end=False)
    streams = _burst(gw.base_url)
    for events in streams:
        assert _anomalies(events) == []
        assert len(_finish_reasons(events)) == 1
        assert _finish_reasons(events)[0] in ("stop", "length")
        assert stream_text(events).strip()
    served = {
        e["unified_routing"]["deployment"]
        for s in streams
        for e in s
        if isinstance(e, dict) and "unified_routing" in e
    }
    assert served == {"llama-0", "llama-1"}  # both servers took a share


def test_over_long_streamed_prompts_are_400s_that_leave_every_circuit_closed(
    start_gateway: Any, llama_server: Callable[..., LlamaServer]
) -> None:
    servers = [llama_server(n_ctx=512), llama_server(n_ctx=512)]
    gw = _gateway(start_gateway, servers, max_parallel_requests=1, context_window=512)
    headers = {"authorization": f"Bearer {CLIENT_KEY}"}
    long_prompt = [{"role": "user", "content": "tell me about the sea " * 200}]
    for _ in range(4):
        answer = httpx.post(
            gw.base_url + "/v1/chat/completions",
            json={"model": "local", "messages": long_prompt, "stream": True},
            headers=headers,
            timeout=60,
        )
        assert answer.status_code == 400
        assert answer.json()["error"]["code"] == "context_length_exceeded"
    status = deployment_status(gw.base_url, "local")
    assert {d: s["status"] for d, s in status.items()} == {
        "llama-0": "available",
        "llama-1": "available",
    }
    events = sse_events(_stream(gw.base_url))
    assert stream_text(events).strip()  # the pool still serves everyone else


STORY = [{"role": "user", "content": "Write a short story about a cat named Taylor."}]
STORY_TOKENS = 40
BEFORE_KILL = 8  # content chunks the client reads from the first server before it dies


def test_a_server_killed_mid_stream_is_continued_on_the_other_as_one_answer(
    start_gateway: Any, llama_server: Callable[..., LlamaServer]
) -> None:
    first, second = llama_server(), llama_server()
    deps = [
        _deployment("llama-0", first, priority=1, supports_prefill=True),
        _deployment("llama-1", second, supports_prefill=True),
    ]
    gw = start_gateway(
        config(
            *deps,
            pools={"local": {"continuation": "prefill"}},
            router=router(json=PATIENT, stream=PATIENT),
            gateway=keys(),
        )
    )
    client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=CLIENT_KEY, max_retries=0)
    stream = client.chat.completions.create(
        model="local", messages=STORY, stream=True, max_tokens=STORY_TOKENS, temperature=0
    )
    deltas: list[str] = []
    finishes: list[str] = []
    prefix = ""
    for chunk in stream:
        for choice in chunk.choices:
            if choice.delta.content:
                deltas.append(choice.delta.content)
            if choice.finish_reason:
                finishes.append(choice.finish_reason)
        if len(deltas) == BEFORE_KILL and not prefix:
            prefix = "".join(deltas)
            first.kill()  # SIGKILL: the server dies mid-answer, as in a crash
    text = "".join(deltas)
    assert prefix, "the first server finished before it could be killed"
    assert len(finishes) == 1  # one complete answer
    assert finishes[0] in ("stop", "length")
    assert text.startswith(prefix)
    rest = text[len(prefix) :]
    assert rest.strip(), "nothing was continued"
    # The join: no whitespace twice, none lost between a word or sentence and the next.
    assert not (prefix[-1].isspace() and rest[0].isspace())
    assert prefix[-1].isspace() or rest[0].isspace() or not rest[0].isalpha(), repr(text)
    # One token a delta (llama.cpp streams token by token): within the client's max_tokens.
    assert len(deltas) <= STORY_TOKENS


OTHER_KEY = remember("sk-other-llama")


def test_over_long_streamed_prompts_without_a_declared_window_cool_no_circuit(
    start_gateway: Any, table: TableView, llama_server: Callable[..., LlamaServer]
) -> None:
    # No context_window: the server itself fails the prompt (a 200 with an empty stream),
    # on both deployments, while another key's requests are served there. The failure
    # follows the request (routing.verdict.request_scope): an honest error, no circuit
    # counts it, and the other key is still served.
    servers = [llama_server(n_ctx=512), llama_server(n_ctx=512)]
    deps = [_deployment(f"llama-{i}", s, max_parallel_requests=1) for i, s in enumerate(servers)]
    section = keys()
    section["api_keys"].append(
        {"name": "other", "sha256": hashlib.sha256(OTHER_KEY.encode()).hexdigest()}
    )
    cfg = config(
        *deps,
        router=router(
            json=PATIENT,
            stream=PATIENT,
            capacity_wait_seconds=60,
            # One counted failure more than allowed opens a circuit: 000's transient class
            # would open both on the first over-long prompt.
            circuit={"allowed_fails": 1, "cooldown_seconds": 60},
        ),
        gateway=section,
    )
    gw = start_gateway(cfg)
    short = {"model": "local", "messages": QUESTION, "max_tokens": 4}
    served: set[str] = set()
    for _ in range(20):  # the other key is served by both (the evidence that they are up)
        answer = httpx.post(
            gw.base_url + "/v1/chat/completions",
            json=short,
            headers={"authorization": f"Bearer {OTHER_KEY}"},
            timeout=120,
        )
        assert answer.status_code == 200, answer.text
        served.add(answer.headers["x-edgeproxy-deployment"])
        if served == {"llama-0", "llama-1"}:
            break
    assert served == {"llama-0", "llama-1"}
    table.wait_successes(1, "llama-0")
    table.wait_successes(1, "llama-1")

    long_prompt = [{"role": "user", "content": "tell me about the sea " * 200}]
    answers = [
        httpx.post(
            gw.base_url + "/v1/chat/completions",
            json={"model": "local", "messages": long_prompt, "stream": True},
            headers={"authorization": f"Bearer {CLIENT_KEY}"},
            timeout=120,
        )
        for _ in range(4)
    ]
    # The empty stream names no cause: the request failed the same way everywhere (502).
    assert [a.status_code for a in answers] == [502] * 4, [a.text[:200] for a in answers]
    codes = {a.json()["error"]["code"] for a in answers}
    assert codes == {"request_failed_on_every_deployment"}
    for dep_id in ("llama-0", "llama-1"):
        circuit = table.circuit(dep_id)
        assert (circuit.state, circuit.failures) == (CircuitState.CLOSED, 0), dep_id
    for _ in range(2):
        answer = httpx.post(
            gw.base_url + "/v1/chat/completions",
            json=short,
            headers={"authorization": f"Bearer {OTHER_KEY}"},
            timeout=120,
        )
        assert answer.status_code == 200, answer.text
