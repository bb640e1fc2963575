"""Asking upstreams for stream usage on the client's behalf."""

from __future__ import annotations

from typing import Any

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.policies import Operation
from edgeproxy.service.attempts import modality_refusal, usage_only, with_stream_usage
from edgeproxy.service.request import ProxyRequest

BODY: dict[str, Any] = {"model": "m", "messages": [], "stream": True}


def dep(provider: str, **fields: Any) -> Deployment:
    return Deployment(
        id="d",
        model="m",
        provider=provider,
        base_url="http://127.0.0.1:1/v1",
        upstream_model="u",
        **fields,
    )


def test_openai_streams_ask_for_usage_and_hide_it() -> None:
    body, hide = with_stream_usage(BODY, dep("openai"), stream=True)
    assert body["stream_options"] == {"include_usage": True}
    assert hide is True
    assert "stream_options" not in BODY  # the client's body is not modified


def test_the_clients_own_choice_is_kept() -> None:
    mine = {**BODY, "stream_options": {"include_usage": False}}
    assert with_stream_usage(mine, dep("openai"), stream=True) == (mine, False)


def test_compatible_servers_opt_in_and_json_calls_never_ask() -> None:
    assert with_stream_usage(BODY, dep("openai_compat"), stream=True) == (BODY, False)
    body, hide = with_stream_usage(BODY, dep("openai_compat", stream_usage=True), stream=True)
    assert hide
    assert body["stream_options"]["include_usage"]
    assert with_stream_usage(BODY, dep("openai"), stream=False) == (BODY, False)
    assert with_stream_usage(BODY, dep("anthropic", stream_usage=True), stream=True)[1] is False


def test_only_the_final_usage_chunk_is_usage_only() -> None:
    assert usage_only({"choices": [], "usage": {"prompt_tokens": 1}})
    assert not usage_only({"choices": [{"index": 0, "delta": {}}], "usage": None})
    assert not usage_only({"choices": []})


def _image_request() -> ProxyRequest:
    return ProxyRequest(
        Operation.CHAT, "m", BODY, "key:x", "req-1", modalities=frozenset({"image", "text"})
    )


def test_the_modality_refusal_names_each_accepted_kind_once() -> None:
    # Two text-only deployments: "accept text only", never "accept text or text only".
    pool = [
        Deployment(id=n, model="m", provider="openai", base_url="http://h/v1", upstream_model="u")
        for n in ("a", "b")
    ]
    fault = modality_refusal(_image_request(), pool)
    assert fault is not None
    assert fault.message == (
        "this request has image input, and this model's deployments accept text only"
    )
    audio = Deployment(
        id="c",
        model="m",
        provider="openai",
        base_url="http://h/v1",
        upstream_model="u",
        modalities=frozenset({"audio", "text"}),
    )
    mixed = modality_refusal(_image_request(), [*pool, audio])
    assert mixed is not None
    assert mixed.message.endswith("accept audio+text or text only")
