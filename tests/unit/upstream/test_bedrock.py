"""OpenAI chat <-> Bedrock Converse translation, stream events and error mapping (no sockets)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.policies import Operation
from edgeproxy.errors import UpstreamFault
from edgeproxy.routing.failures import classify, fallback_reason
from edgeproxy.routing.faults import FailureClass, FaultKind
from edgeproxy.upstream.bedrock_convert import to_chat_completion, to_converse
from edgeproxy.upstream.bedrock_errors import client_fault
from edgeproxy.upstream.bedrock_stream import BedrockChunks
from edgeproxy.upstream.call import UpstreamCall, Usage

DEP = Deployment.model_validate(
    {"id": "br", "model": "m", "provider": "bedrock", "upstream_model": "amazon.nova-pro-v1:0"}
)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look it up",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        },
    }
]


def converse(body: dict[str, Any]) -> dict[str, Any]:
    return to_converse(UpstreamCall(DEP, Operation.CHAT, body))


def test_a_whole_conversation_translates_to_converse() -> None:
    call = {
        "id": "t1",
        "type": "function",
        "function": {"name": "lookup", "arguments": '{"q": "x"}'},
    }
    body = {
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "developer", "content": [{"type": "text", "text": "No emoji."}]},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is this?"},
                    {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,AAEC"}},
                ],
            },
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "t1", "content": "a cat"},
            {"role": "user", "content": "Thanks"},
        ],
        "max_completion_tokens": 99,
        "top_p": 0.9,
        "stop": "END",
        "tools": TOOLS,
        "tool_choice": {"type": "function", "function": {"name": "lookup"}},
        "presence_penalty": 1.0,  # no Converse equivalent: dropped
    }
    out = converse(body)
    assert out["modelId"] == "amazon.nova-pro-v1:0"
    assert out["system"] == [{"text": "Be brief."}, {"text": "No emoji."}]
    assert out["messages"] == [
        {
            "role": "user",
            "content": [
                {"text": "What is this?"},
                {"image": {"format": "jpeg", "source": {"bytes": b"\x00\x01\x02"}}},
            ],
        },
        {
            "role": "assistant",
            "content": [{"toolUse": {"toolUseId": "t1", "name": "lookup", "input": {"q": "x"}}}],
        },
        {
            "role": "user",
            "content": [
                {"toolResult": {"toolUseId": "t1", "content": [{"text": "a cat"}]}},
                {"text": "Thanks"},
            ],
        },
    ]
    assert out["inferenceConfig"] == {"maxTokens": 99, "topP": 0.9, "stopSequences": ["END"]}
    assert out["toolConfig"]["toolChoice"] == {"tool": {"name": "lookup"}}
    assert out["toolConfig"]["tools"] == [
        {
            "toolSpec": {
                "name": "lookup",
                "description": "Look it up",
                "inputSchema": {
                    "json": {"type": "object", "properties": {"q": {"type": "string"}}}
                },
            }
        }
    ]
    assert "presence_penalty" not in json.dumps(out, default=str)


def test_tool_choice_none_sends_no_tools_unless_the_history_needs_them() -> None:
    plain = converse(
        {"messages": [{"role": "user", "content": "hi"}], "tools": TOOLS, "tool_choice": "none"}
    )
    assert "toolConfig" not in plain
    auto = converse(
        {"messages": [{"role": "user", "content": "hi"}], "tools": TOOLS, "tool_choice": "auto"}
    )
    assert auto["toolConfig"]["toolChoice"] == {"auto": {}}


@pytest.mark.parametrize(
    "body",
    [
        {"messages": [], "n": 3},
        {"messages": [], "response_format": {"type": "json_schema", "json_schema": {}}},
        {"messages": [{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}]},
        {
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}],
                }
            ]
        },
        {
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "image_url", "image_url": {"url": "data:image/bmp;base64,AA=="}}
                    ],
                }
            ]
        },
        {
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,%%%"}}
                    ],
                }
            ]
        },
    ],
)
def test_what_converse_cannot_express_is_incompatible(body: dict[str, Any]) -> None:
    with pytest.raises(UpstreamFault) as caught:
        converse(body)
    assert caught.value.fault.kind is FaultKind.INCOMPATIBLE


def test_a_converse_answer_becomes_a_chat_completion() -> None:
    answer = {
        "output": {
            "message": {
                "role": "assistant",
                "content": [
                    {"reasoningContent": {"reasoningText": {"text": "hmm"}}},
                    {"text": "Let me look."},
                    {"toolUse": {"toolUseId": "tu1", "name": "lookup", "input": {"q": "cats"}}},
                ],
            }
        },
        "stopReason": "tool_use",
        "usage": {"inputTokens": 12, "outputTokens": 7, "totalTokens": 19},
    }
    out = to_chat_completion(answer, "amazon.nova-pro-v1:0", "chatcmpl-r1", 1700)
    assert out["id"] == "chatcmpl-r1"
    assert out["model"] == "amazon.nova-pro-v1:0"
    choice = out["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] == "Let me look."
    assert choice["message"]["tool_calls"] == [
        {
            "id": "tu1",
            "type": "function",
            "function": {"name": "lookup", "arguments": '{"q": "cats"}'},
        }
    ]
    assert out["usage"] == {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}


@pytest.mark.parametrize(
    ("stop", "finish"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("guardrail_intervened", "content_filter"),
        ("content_filtered", "content_filter"),
        ("something_new", "stop"),
    ],
)
def test_stop_reasons_map_to_finish_reasons(stop: str, finish: str) -> None:
    out = to_chat_completion({"stopReason": stop}, "m", "id", 0)
    assert out["choices"][0]["finish_reason"] == finish


def test_stream_events_become_chunks() -> None:
    chunks = BedrockChunks("chatcmpl-s", "m", 5, include_usage=True)
    events = [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "Hi"}}},
        {
            "contentBlockDelta": {
                "contentBlockIndex": 0,
                "delta": {"reasoningContent": {"text": "x"}},
            }
        },
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {
            "contentBlockStart": {
                "contentBlockIndex": 1,
                "start": {"toolUse": {"toolUseId": "tu", "name": "f"}},
            }
        },
        {"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"toolUse": {"input": '{"a":'}}}},
        {"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"toolUse": {"input": " 1}"}}}},
        {"messageStop": {"stopReason": "tool_use"}},
        {"metadata": {"usage": {"inputTokens": 3, "outputTokens": 4}, "metrics": {"latencyMs": 9}}},
    ]
    out = [e for event in events for e in chunks.feed(event)]
    deltas = [e.chunk["choices"][0]["delta"] for e in out if e.chunk and e.chunk["choices"]]
    assert deltas[0] == {"role": "assistant", "content": ""}
    assert deltas[1] == {"content": "Hi"}
    assert deltas[2]["tool_calls"][0] == {
        "index": 0,
        "id": "tu",
        "type": "function",
        "function": {"name": "f", "arguments": ""},
    }
    assert [d["tool_calls"][0]["function"]["arguments"] for d in deltas[3:5]] == ['{"a":', " 1}"]
    assert out[-3].chunk is not None
    assert out[-3].chunk["choices"][0]["finish_reason"] == "tool_calls"
    assert out[-2].chunk is not None
    assert out[-2].chunk["usage"] == {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
    assert out[-1].done
    assert chunks.usage == Usage(3, 4)
    assert {e.chunk["id"] for e in out if e.chunk} == {"chatcmpl-s"}


def test_a_stream_without_usage_request_gets_no_usage_chunk() -> None:
    chunks = BedrockChunks("c", "m", 0, include_usage=False)
    out = chunks.feed({"metadata": {"usage": {"inputTokens": 1, "outputTokens": 2}}})
    assert [e.done for e in out] == [True]
    assert chunks.usage == Usage(1, 2)


def test_a_tool_delta_without_its_start_is_malformed() -> None:
    with pytest.raises(UpstreamFault) as caught:
        BedrockChunks("c", "m", 0, False).feed(
            {"contentBlockDelta": {"contentBlockIndex": 3, "delta": {"toolUse": {"input": "{}"}}}}
        )
    assert caught.value.fault.kind is FaultKind.MALFORMED


def error(code: str, message: str = "nope", status: int | None = None) -> dict[str, Any]:
    response: dict[str, Any] = {"Error": {"Code": code, "Message": message}}
    if status is not None:
        response["ResponseMetadata"] = {"HTTPStatusCode": status}
    return response


@pytest.mark.parametrize(
    ("code", "message", "status", "cls"),
    [
        ("ThrottlingException", "Too many requests", 429, FailureClass.THROTTLE),
        ("throttlingException", "in a stream", 429, FailureClass.THROTTLE),
        ("ServiceQuotaExceededException", "quota", 429, FailureClass.THROTTLE),
        ("ValidationException", "bad input", 400, FailureClass.REQUEST),
        ("AccessDeniedException", "no access", 403, FailureClass.CONFIGURATION),
        ("UnrecognizedClientException", "bad token", 401, FailureClass.CONFIGURATION),
        ("ResourceNotFoundException", "no such model", 404, FailureClass.CONFIGURATION),
        (
            "ValidationException",
            "The provided model identifier is invalid.",
            400,
            FailureClass.CONFIGURATION,
        ),
        ("ModelNotReadyException", "warming", 503, FailureClass.TRANSIENT),
        ("ServiceUnavailableException", "down", 503, FailureClass.TRANSIENT),
        ("InternalServerException", "oops", 500, FailureClass.TRANSIENT),
        ("modelStreamErrorException", "stream broke", 502, FailureClass.TRANSIENT),
        ("ModelTimeoutException", "slow", 504, FailureClass.TRANSIENT),
    ],
)
def test_bedrock_errors_classify_like_any_providers(
    code: str, message: str, status: int, cls: FailureClass
) -> None:
    found = client_fault(error(code, message), ())
    assert (found.fault.kind, found.fault.status) == (FaultKind.HTTP, status)
    assert classify(found.fault) is cls


def test_context_window_errors_take_the_context_chain_and_unknown_codes_keep_their_status() -> None:
    too_long = client_fault(
        error("ValidationException", "Input is too long for requested model."), ()
    )
    assert too_long.fault.code == "context_length_exceeded"
    assert fallback_reason(too_long.fault) is not None
    odd = client_fault(error("SomethingNew", status=418), ("https://secret.endpoint",))
    assert odd.fault.status == 418
    leaky = client_fault(
        error("ValidationException", "see https://secret.endpoint now"),
        ("https://secret.endpoint",),
    )
    assert "secret.endpoint" not in leaky.fault.message
