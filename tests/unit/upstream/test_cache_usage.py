"""Each provider's prompt-cache counts, read into one ``Usage`` and shown per surface.

OpenAI's ``prompt_tokens`` include its ``cached_tokens``; Anthropic's and Bedrock
Converse's input counts leave the cache's reads and writes out.
"""

from __future__ import annotations

import json

from edgeproxy.upstream.anthropic import to_chat_completion
from edgeproxy.upstream.anthropic_stream import AnthropicChunks
from edgeproxy.upstream.bedrock_convert import usage_of
from edgeproxy.upstream.call import Usage
from edgeproxy.upstream.sse import ServerSentEvent

ANTHROPIC_USAGE = {
    "input_tokens": 12,
    "cache_creation_input_tokens": 300,
    "cache_read_input_tokens": 900,
    "output_tokens": 7,
}


def test_openai_prompt_tokens_include_the_cached_ones() -> None:
    usage = Usage.from_openai(
        {
            "prompt_tokens": 1000,
            "completion_tokens": 5,
            "prompt_tokens_details": {"cached_tokens": 900},
        }
    )
    assert usage == Usage(1000, 5, cache_read_tokens=900)
    assert usage.anthropic_fields() == {
        "input_tokens": 100,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 900,
    }


def test_anthropic_input_tokens_leave_the_cache_out() -> None:
    usage = Usage.from_anthropic(ANTHROPIC_USAGE)
    assert usage == Usage(1212, 7, cache_read_tokens=900, cache_write_tokens=300)
    fields = usage.openai_fields()
    assert fields["prompt_tokens"] == 1212
    assert fields["prompt_tokens_details"] == {"cached_tokens": 900, "cache_write_tokens": 300}
    assert Usage.from_openai(fields) == usage  # the translation round-trips


def test_an_anthropic_answer_carries_its_cache_counts_in_openai_form() -> None:
    message = {"id": "msg_1", "model": "claude", "content": [], "usage": ANTHROPIC_USAGE}
    usage = to_chat_completion(message, 0)["usage"]
    assert Usage.from_openai(usage) == Usage(1212, 7, 900, 300)


def _event(payload: dict[str, object]) -> ServerSentEvent:
    return ServerSentEvent(data=json.dumps(payload), event=str(payload["type"]))


def test_an_anthropic_stream_keeps_message_starts_cache_counts_past_message_delta() -> None:
    chunks = AnthropicChunks(0, [], include_usage=True)
    start = {**ANTHROPIC_USAGE, "output_tokens": 1}
    chunks.feed(_event({"type": "message_start", "message": {"id": "m", "usage": start}}))
    delta = {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn"},
        "usage": {"output_tokens": 7},
    }
    chunks.feed(_event(delta))
    assert chunks.usage == Usage(1212, 7, 900, 300)
    [usage_chunk, _done] = chunks.feed(_event({"type": "message_stop"}))
    assert usage_chunk.chunk is not None
    assert usage_chunk.chunk["usage"]["prompt_tokens_details"]["cached_tokens"] == 900


def test_bedrock_converse_cache_counts_are_apart_from_input_tokens() -> None:
    usage = usage_of(
        {
            "inputTokens": 12,
            "outputTokens": 7,
            "cacheReadInputTokens": 900,
            "cacheWriteInputTokens": 300,
        }
    )
    assert usage == Usage(1212, 7, 900, 300)


def test_usage_without_cache_counts_keeps_its_old_shape() -> None:
    assert Usage(10, 2).openai_fields() == {
        "prompt_tokens": 10,
        "completion_tokens": 2,
        "total_tokens": 12,
    }
    assert Usage(10, 2).anthropic_fields() == {"input_tokens": 10}
