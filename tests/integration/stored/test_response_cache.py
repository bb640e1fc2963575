"""The exact response cache through real gateways, with the stock openai and anthropic SDKs.

The mock upstream numbers its answers (``chatcmpl-mock-a-<n>``) and logs every
call, so "a hit makes no upstream call" and "the stored answer" are read off it.
Keys are the table's (admin API), so scopes, teams, revocation and spend are real.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import anthropic
import httpx
import openai
import pytest

from edgeproxy.state.dynamodb.dynamo_levels import level_spend_key
from edgeproxy.state.items import get_float
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.table import TableView, wait_for
from tests.integration.keys.helpers import ADMIN_KEY, ENV, bearer, create_key, revoke_key
from tests.integration.usage.helpers import admin_get, gateway_config, key_spend, priced, records

CHAT = "/v1/chat/completions"
HELLO = [{"role": "user", "content": "Hello!"}]
ROOT = bearer(ADMIN_KEY)


def _cache(scope: str = "key", **rule: Any) -> dict[str, Any]:
    return {"pools": {"fast-chat": {"scope": scope, **rule}}}


def _calls(upstream: MockUpstream) -> int:
    return len([r for r in upstream.requests() if r["path"] == CHAT])


def _gateway(start: Callable[..., Any], upstream: MockUpstream, **cache: Any) -> Any:
    return start(gateway_config(priced("a", upstream), cache=cache or _cache()), env=ENV)


def _chat(base_url: str, key: str, headers: dict[str, str] | None = None, **body: Any) -> Any:
    payload = {"model": "fast-chat", "messages": HELLO, **body}
    return httpx.post(
        base_url + CHAT, json=payload, headers={**bearer(key), **(headers or {})}, timeout=30
    )


def _early_in_a_minute(clock: FleetClock) -> None:
    """Move the clock to a minute's first seconds: an rpm test's requests share one minute."""
    into = clock.now() % 60
    if into > 20:
        clock.advance(60 - into + 1)


def _oai(base_url: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url + "/v1", api_key=key, max_retries=0, timeout=30)


def test_openai_sdk_json_second_identical_request_is_a_hit_without_an_upstream_call(
    start_gateway: Callable[..., Any], upstream_a: MockUpstream
) -> None:
    gw = _gateway(start_gateway, upstream_a)
    key = create_key(gw.base_url, name="app")["key"]
    with _oai(gw.base_url, key) as client:
        first = client.chat.completions.with_raw_response.create(model="fast-chat", messages=HELLO)
        again = client.chat.completions.with_raw_response.create(messages=HELLO, model="fast-chat")
    assert first.headers["x-edgeproxy-cache"] == "miss"
    assert "age" not in first.headers
    assert again.headers["x-edgeproxy-cache"] == "hit"
    assert int(again.headers["age"]) >= 0
    assert again.headers["x-request-id"] != first.headers["x-request-id"]
    assert again.parse().model_dump() == first.parse().model_dump()
    assert again.parse().id == "chatcmpl-mock-a-1"
    assert _calls(upstream_a) == 1


def test_openai_sdk_stream_is_replayed_as_chunks_the_stream_helper_parses(
    start_gateway: Callable[..., Any], upstream_a: MockUpstream
) -> None:
    gw = _gateway(start_gateway, upstream_a)
    key = create_key(gw.base_url, name="app")["key"]

    def streamed(client: openai.OpenAI) -> tuple[list[dict[str, Any]], str, Any]:
        with client.chat.completions.stream(
            model="fast-chat", messages=HELLO, stream_options={"include_usage": True}
        ) as stream:
            chunks = [e.chunk.model_dump() for e in stream if e.type == "chunk"]
            final = stream.get_final_completion()
        return chunks, final.choices[0].message.content or "", final.usage

    with _oai(gw.base_url, key) as client:
        first, text, usage = streamed(client)
        again, text_again, usage_again = streamed(client)
        plain = client.chat.completions.create(model="fast-chat", messages=HELLO, stream=True)
        list(plain)  # no stream_options: another request, a miss
    assert _calls(upstream_a) == 2
    assert again == first
    assert text_again == text
    assert text
    assert usage_again == usage
    assert usage is not None
    assert usage.total_tokens > 0


def test_anthropic_sdk_json_and_stream_hits(
    start_gateway: Callable[..., Any], upstream_a: MockUpstream
) -> None:
    gw = _gateway(start_gateway, upstream_a)
    key = create_key(gw.base_url, name="app")["key"]
    claude = anthropic.Anthropic(base_url=gw.base_url, api_key=key, max_retries=0, timeout=30)
    try:
        raw = [
            claude.messages.with_raw_response.create(
                model="fast-chat",
                max_tokens=64,
                messages=HELLO,  # type: ignore[arg-type]
            )
            for _ in range(2)
        ]
        streams = []
        for _ in range(2):
            with claude.messages.stream(
                model="fast-chat",
                max_tokens=64,
                messages=HELLO,  # type: ignore[arg-type]
            ) as stream:
                events = [e.type for e in stream]
                streams.append((events, stream.get_final_message().model_dump()))
    finally:
        claude.close()
    assert [r.headers["x-edgeproxy-cache"] for r in raw] == ["miss", "hit"]
    assert raw[1].parse().model_dump() == raw[0].parse().model_dump()
    assert streams[1] == streams[0]
    assert streams[0][0][0] == "message_start"
    assert streams[0][0][-1] == "message_stop"
    assert streams[0][1]["content"][0]["text"]
    assert _calls(upstream_a) == 2  # one JSON call, one stream call


def test_no_cache_skips_the_lookup_and_stores_the_fresh_answer_no_store_does_neither(
    start_gateway: Callable[..., Any], upstream_a: MockUpstream
) -> None:
    gw = _gateway(start_gateway, upstream_a)
    key = create_key(gw.base_url, name="app")["key"]
    nothing = _chat(gw.base_url, key, {"cache-control": "no-store"})
    assert nothing.headers["x-edgeproxy-cache"] == "bypass"
    first = _chat(gw.base_url, key)
    assert first.headers["x-edgeproxy-cache"] == "miss"  # no-store stored nothing
    fresh = _chat(gw.base_url, key, {"cache-control": "no-cache"})
    assert fresh.headers["x-edgeproxy-cache"] == "bypass"
    assert fresh.json()["id"] == "chatcmpl-mock-a-3"
    skipped = _chat(gw.base_url, key, {"cache-control": "no-store"})
    assert skipped.json()["id"] == "chatcmpl-mock-a-4"  # no-store never reads either
    hit = _chat(gw.base_url, key)
    assert hit.headers["x-edgeproxy-cache"] == "hit"
    assert hit.json()["id"] == "chatcmpl-mock-a-3"  # the no-cache answer replaced the first
    assert _calls(upstream_a) == 4


def test_ttl_header_sets_the_lifetime_and_out_of_range_is_a_400(
    start_gateway: Callable[..., Any], upstream_a: MockUpstream, clock: FleetClock
) -> None:
    gw = _gateway(start_gateway, upstream_a)
    key = create_key(gw.base_url, name="app")["key"]
    for bad in ("0", "-5", "604801", "soon"):
        refused = _chat(gw.base_url, key, {"x-edgeproxy-cache-ttl": bad})
        assert refused.status_code == 400, bad
        error = refused.json()["error"]
        assert error["param"] == "x-edgeproxy-cache-ttl"
        assert error["code"] == "invalid_cache_ttl"
    assert _calls(upstream_a) == 0
    assert _chat(gw.base_url, key, {"x-edgeproxy-cache-ttl": "30"}).status_code == 200
    clock.advance(20)
    hit = _chat(gw.base_url, key)
    assert hit.headers["x-edgeproxy-cache"] == "hit"
    assert int(hit.headers["age"]) >= 20
    clock.advance(15)  # 35 s after it was stored: expired
    assert _chat(gw.base_url, key).headers["x-edgeproxy-cache"] == "miss"
    assert _calls(upstream_a) == 2


def test_error_answers_are_never_stored(
    start_gateway: Callable[..., Any], upstream_a: MockUpstream
) -> None:
    gw = _gateway(start_gateway, upstream_a)
    key = create_key(gw.base_url, name="app")["key"]
    upstream_a.set_faults([{"status": 400}])
    assert _chat(gw.base_url, key).status_code == 400
    answer = _chat(gw.base_url, key)
    assert answer.status_code == 200
    assert answer.headers["x-edgeproxy-cache"] == "miss"
    assert _calls(upstream_a) == 2


def test_two_teams_with_the_same_prompt_never_share_and_one_team_does(
    start_gateway: Callable[..., Any], upstream_a: MockUpstream
) -> None:
    gw = _gateway(start_gateway, upstream_a, **_cache("team"))
    for path, body in (
        ("/admin/organizations", {"id": "acme", "name": "Acme"}),
        ("/admin/teams", {"id": "search", "name": "Search", "organization_id": "acme"}),
        ("/admin/teams", {"id": "ads", "name": "Ads", "organization_id": "acme"}),
    ):
        made = httpx.post(gw.base_url + path, json=body, headers=ROOT, timeout=10)
        assert made.status_code == 201, made.text
    s1, s2, a1 = (
        create_key(gw.base_url, name=n, team_id=t)["key"]
        for n, t in (("s1", "search"), ("s2", "search"), ("a1", "ads"))
    )
    assert _chat(gw.base_url, s1).headers["x-edgeproxy-cache"] == "miss"
    shared = _chat(gw.base_url, s2)
    assert shared.headers["x-edgeproxy-cache"] == "hit"  # same team
    other = _chat(gw.base_url, a1)
    assert other.headers["x-edgeproxy-cache"] == "miss"  # another team: never its answer
    assert other.json()["id"] == "chatcmpl-mock-a-2"
    assert _calls(upstream_a) == 2


def test_key_scope_keeps_each_key_apart_and_a_revoked_keys_entries_are_never_served(
    start_gateway: Callable[..., Any], upstream_a: MockUpstream
) -> None:
    gw = _gateway(start_gateway, upstream_a)
    one = create_key(gw.base_url, name="one")
    two = create_key(gw.base_url, name="two")["key"]
    assert _chat(gw.base_url, one["key"]).status_code == 200
    assert _chat(gw.base_url, one["key"]).headers["x-edgeproxy-cache"] == "hit"
    assert _chat(gw.base_url, two).headers["x-edgeproxy-cache"] == "miss"
    assert revoke_key(gw.base_url, one["id"]).status_code == 200
    refused = _chat(gw.base_url, one["key"])
    assert refused.status_code == 401
    assert "x-edgeproxy-cache" not in refused.headers
    assert _calls(upstream_a) == 2


def test_a_hit_spends_nothing_counts_its_request_and_is_logged_with_its_saving(
    start_gateway: Callable[..., Any], upstream_a: MockUpstream, clock: FleetClock
) -> None:
    gw = _gateway(start_gateway, upstream_a)
    made = create_key(gw.base_url, name="billed", rpm_limit=2)
    key, key_id = made["key"], made["id"]
    _early_in_a_minute(clock)
    at = clock.now()
    assert _chat(gw.base_url, key).status_code == 200
    [miss] = records(gw.base_url, at, 1)
    spent = key_spend(gw.base_url, key_id)
    assert spent == pytest.approx(miss["cost_usd"])
    assert spent > 0
    assert _chat(gw.base_url, key).headers["x-edgeproxy-cache"] == "hit"
    hit, _ = records(gw.base_url, at, 2)
    assert (hit["cache"], miss["cache"]) == ("hit", "miss")
    assert hit["cost_usd"] == 0
    assert hit["saved_usd"] == pytest.approx(miss["cost_usd"])
    assert hit["attempts"] == 0
    assert hit["prompt_tokens"] == 0
    assert key_spend(gw.base_url, key_id) == spent  # nothing spent on the hit
    third = _chat(gw.base_url, key)  # the hit counted against rpm: 2 a minute
    assert third.status_code == 429
    assert _calls(upstream_a) == 1
    report = admin_get(gw.base_url, "/admin/usage", group_by="key").json()
    assert report["totals"]["cache_hits"] == 1
    assert report["totals"]["saved_usd"] == pytest.approx(miss["cost_usd"], abs=1e-6)


def test_two_processes_share_hits(
    start_gateway: Callable[..., Any], spawn_gateway: Callable[..., Any], upstream_a: MockUpstream
) -> None:
    cfg = gateway_config(priced("a", upstream_a), cache=_cache())
    local = start_gateway(cfg, env=ENV)
    remote = spawn_gateway(env=ENV)
    key = create_key(local.base_url, name="app")["key"]
    assert _chat(local.base_url, key).headers["x-edgeproxy-cache"] == "miss"
    hit = _chat(remote.base_url, key)
    assert hit.headers["x-edgeproxy-cache"] == "hit"
    assert hit.json()["id"] == "chatcmpl-mock-a-1"
    assert _calls(upstream_a) == 1


def test_identical_requests_in_flight_over_two_processes_make_one_upstream_call(
    start_gateway: Callable[..., Any], spawn_gateway: Callable[..., Any], upstream_a: MockUpstream
) -> None:
    cfg = gateway_config(priced("a", upstream_a), cache=_cache(coalesce=True))
    local = start_gateway(cfg, env=ENV)
    remote = spawn_gateway(env=ENV)
    key = create_key(local.base_url, name="app")["key"]
    upstream_a.set_faults([], persistent={"latency_ms": 1500})

    async def burst() -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=30) as http:
            return list(
                await asyncio.gather(
                    *(
                        http.post(
                            gw.base_url + CHAT,
                            json={"model": "fast-chat", "messages": HELLO},
                            headers=bearer(key),
                        )
                        for i in range(10)
                        for gw in ((local, remote)[i % 2],)
                    )
                )
            )

    answers = asyncio.run(burst())
    assert [a.status_code for a in answers] == [200] * 10
    assert _calls(upstream_a) == 1
    assert {a.json()["id"] for a in answers} == {"chatcmpl-mock-a-1"}
    assert sorted(a.headers["x-edgeproxy-cache"] for a in answers) == ["hit"] * 9 + ["miss"]


def test_a_coalesced_wait_is_bounded_then_the_request_calls_itself(
    start_gateway: Callable[..., Any], upstream_a: MockUpstream
) -> None:
    cfg = gateway_config(
        priced("a", upstream_a), cache=_cache(coalesce=True, coalesce_wait_seconds=0.3)
    )
    gw = start_gateway(cfg, env=ENV)
    key = create_key(gw.base_url, name="app")["key"]
    upstream_a.set_faults([{"latency_ms": 1500}])  # the first call is slow

    async def two() -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=30) as http:
            first = asyncio.ensure_future(
                http.post(
                    gw.base_url + CHAT,
                    json={"model": "fast-chat", "messages": HELLO},
                    headers=bearer(key),
                )
            )
            # The first holds the lease and is upstream (polled with a deadline).
            await asyncio.to_thread(
                wait_for, lambda: _calls(upstream_a), lambda n: n >= 1, "the first call"
            )
            second = await http.post(
                gw.base_url + CHAT,
                json={"model": "fast-chat", "messages": HELLO},
                headers=bearer(key),
            )
            return [await first, second]

    first, second = asyncio.run(two())
    assert (first.status_code, second.status_code) == (200, 200)
    assert second.headers["x-edgeproxy-cache"] == "miss"
    assert second.json()["id"] != first.json()["id"]  # it stopped waiting and called itself
    assert _calls(upstream_a) == 2


@pytest.mark.parametrize(
    "fault", [{"cut_after_chunks": 2}, {"finish_reason": None}, {"no_done": True}]
)
def test_cut_and_anomalous_streams_are_never_stored(
    start_gateway: Callable[..., Any], upstream_a: MockUpstream, fault: dict[str, Any]
) -> None:
    gw = _gateway(start_gateway, upstream_a)
    key = create_key(gw.base_url, name="app")["key"]
    upstream_a.set_faults([fault])
    with httpx.Client(timeout=30) as http:
        payload = {"model": "fast-chat", "messages": HELLO, "stream": True}
        with http.stream("POST", gw.base_url + CHAT, json=payload, headers=bearer(key)) as got:
            assert got.headers["x-edgeproxy-cache"] == "miss"
            got.read()
        again = http.post(gw.base_url + CHAT, json=payload, headers=bearer(key))
    assert again.headers["x-edgeproxy-cache"] == "miss"
    assert _calls(upstream_a) == 2


def test_responses_api_json_and_stream_hits_parse_with_the_sdk(
    start_gateway: Callable[..., Any], upstream_a: MockUpstream
) -> None:
    gw = _gateway(start_gateway, upstream_a)
    key = create_key(gw.base_url, name="app")["key"]
    with _oai(gw.base_url, key) as client:
        raw = [
            client.responses.with_raw_response.create(model="fast-chat", input="Hello!")
            for _ in range(2)
        ]
        finals = []
        for _ in range(2):
            with client.responses.stream(model="fast-chat", input="Hello!") as stream:
                types = [e.type for e in stream]
                finals.append((types, stream.get_final_response().model_dump()))
    assert [r.headers["x-edgeproxy-cache"] for r in raw] == ["miss", "hit"]
    assert raw[1].parse().model_dump() == raw[0].parse().model_dump()
    assert finals[1] == finals[0]
    assert finals[0][0][-1] == "response.completed"
    assert finals[0][1]["output"]
    assert _calls(upstream_a) == 2


def test_an_answer_shaped_like_it_holds_a_credential_is_never_stored(
    start_gateway: Callable[..., Any], upstream_a: MockUpstream
) -> None:
    gw = _gateway(start_gateway, upstream_a)
    key = create_key(gw.base_url, name="app")["key"]
    leaked = "your key is sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 2
    answer = {
        "id": "chatcmpl-echo",
        "object": "chat.completion",
        "created": 1,
        "model": "mock-small",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": leaked},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8},
    }
    upstream_a.set_faults([{"body": answer}])
    first = _chat(gw.base_url, key)
    assert first.status_code == 200
    assert first.headers["x-edgeproxy-cache"] == "miss"
    again = _chat(gw.base_url, key)
    assert again.headers["x-edgeproxy-cache"] == "miss"  # the echo was not kept
    assert _calls(upstream_a) == 2


def test_routing_metadata_and_pinned_requests_are_not_cached(
    start_gateway: Callable[..., Any], upstream_a: MockUpstream
) -> None:
    gw = _gateway(start_gateway, upstream_a)
    key = create_key(gw.base_url, name="app")["key"]
    asked = {"x-unified-routing-metadata": "true"}
    for _ in range(2):
        answer = _chat(gw.base_url, key, asked)
        assert answer.status_code == 200
        assert "x-edgeproxy-cache" not in answer.headers
        assert "unified_routing" in answer.json()
    assert _chat(gw.base_url, key).headers["x-edgeproxy-cache"] == "miss"
    assert _calls(upstream_a) == 3


def test_a_hit_counts_against_its_teams_rpm_and_spends_nothing_of_its_budget(
    start_gateway: Callable[..., Any], upstream_a: MockUpstream, table: TableView, clock: FleetClock
) -> None:
    gw = _gateway(start_gateway, upstream_a, **_cache("team"))
    for path, body in (
        ("/admin/organizations", {"id": "acme", "name": "Acme"}),
        (
            "/admin/teams",
            {
                "id": "search",
                "name": "Search",
                "organization_id": "acme",
                "rpm_limit": 2,
                "budget_usd": 100.0,
            },
        ),
    ):
        made = httpx.post(gw.base_url + path, json=body, headers=ROOT, timeout=10)
        assert made.status_code == 201, made.text
    key = create_key(gw.base_url, name="s1", team_id="search")["key"]

    def spend() -> float:
        return get_float(table.item(level_spend_key("team:search")), "spend_usd")

    _early_in_a_minute(clock)
    at = clock.now()
    first = _chat(gw.base_url, key)
    assert first.headers["x-edgeproxy-cache"] == "miss"
    [miss] = records(gw.base_url, at, 1)
    cost = miss["cost_usd"]
    assert cost > 0
    wait_for(spend, lambda s: abs(s - cost) < 1e-9, "the miss's spend settled at the team")
    assert _chat(gw.base_url, key).headers["x-edgeproxy-cache"] == "hit"
    refused = _chat(gw.base_url, key)  # the team's 2 a minute: the hit was one
    assert refused.status_code == 429
    assert "level team" in refused.json()["error"]["message"]
    assert spend() == pytest.approx(cost)  # the hit's charge settled at zero
    assert _calls(upstream_a) == 1
