"""The relay's typed stream events -> Responses API stream events."""

from __future__ import annotations

import json
from typing import Any

from edgeproxy.api.surfaces.responses_answer import to_response
from edgeproxy.api.surfaces.responses_stream import ResponseEvents
from edgeproxy.errors import ModelOverloaded
from edgeproxy.service.stream.events import KEEPALIVE, Chunk, Closing, Failed, StreamItem
from edgeproxy.upstream.call import Usage


def chunk(delta: dict[str, Any], finish: str | None = None) -> Chunk:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return Chunk({"id": "c", "model": "mock-small", "created": 7, "choices": [choice]})


def render(*items: StreamItem) -> list[dict[str, Any]]:
    events = ResponseEvents(0.0)
    frames = [frame for item in items for frame in events.feed(item)] + events.close()
    out = []
    for frame in frames:
        text = frame.decode()
        if text.startswith(":"):
            out.append({"type": "keepalive"})
            continue
        head, data = text.strip().split("\n")
        payload = json.loads(data.removeprefix("data: "))
        assert head == f"event: {payload['type']}"
        out.append(payload)
    return out


def test_text_then_a_tool_call_become_items_and_a_completed_response() -> None:
    call = {"index": 0, "id": "call_1", "function": {"name": "f", "arguments": ""}}
    events = render(
        chunk({"role": "assistant", "content": ""}),
        KEEPALIVE,
        chunk({"content": "Hi"}),
        chunk({"tool_calls": [call]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"a":'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}),
        chunk({}, "tool_calls"),
        Closing(usage=Usage(5, 3), routing={"served_by": "a"}),
    )
    assert [e["type"] for e in events] == [
        "response.created",
        "response.in_progress",
        "keepalive",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    numbers = [e["sequence_number"] for e in events if "sequence_number" in e]
    assert numbers == list(range(len(numbers)))
    response = events[-1]["response"]
    message, function_call = response["output"]
    assert message["content"][0]["text"] == "Hi"
    assert (function_call["call_id"], function_call["arguments"]) == ("call_1", '{"a":1}')
    assert response["usage"]["input_tokens"] == 5
    assert response["usage"]["total_tokens"] == 8
    assert response["unified_routing"] == {"served_by": "a"}
    assert events[0]["response"]["id"] == response["id"]


def test_length_is_an_incomplete_response() -> None:
    events = render(chunk({"content": "Hi"}), chunk({}, "length"), Closing())
    assert events[-1]["type"] == "response.incomplete"
    assert events[-1]["response"]["incomplete_details"] == {"reason": "max_output_tokens"}


def test_a_failure_after_the_commit_is_an_error_then_a_failed_response() -> None:
    events = render(chunk({"content": "Hi"}), Failed(ModelOverloaded("busy")))
    assert [e["type"] for e in events][-2:] == ["error", "response.failed"]
    assert events[-2]["code"] == "model_overloaded"
    failed = events[-1]["response"]
    assert failed["status"] == "failed"
    assert failed["error"]["message"] == "busy"
    assert failed["output"][0]["status"] == "incomplete"


def test_a_source_that_ends_without_closing_is_a_failure() -> None:
    events = render(chunk({"content": "Hi"}))
    assert events[-1]["type"] == "response.failed"
    assert "ended before" in events[-1]["response"]["error"]["message"]


def test_native_events_pass_through_and_the_terminal_one_waits_for_closing() -> None:
    created = {"type": "response.created", "sequence_number": 0, "response": {"id": "resp_n"}}
    delta = {"type": "response.output_text.delta", "sequence_number": 1, "delta": "Hi"}
    done = {"type": "response.completed", "sequence_number": 2, "response": {"id": "resp_n"}}
    events = ResponseEvents(0.0)
    assert [json.loads(f.decode().split("data: ")[1]) for f in events.feed(Chunk(created))] == [
        created
    ]
    events.feed(Chunk(delta))
    assert events.feed(Chunk(done)) == []  # held until the relay says the stream is complete
    [last] = events.feed(Closing(routing={"served_by": "n"}))
    payload = json.loads(last.decode().split("data: ")[1])
    assert payload["response"] == {"id": "resp_n", "unified_routing": {"served_by": "n"}}
    assert events.close() == []


def test_a_native_failure_names_the_native_response() -> None:
    created = {"type": "response.created", "sequence_number": 4, "response": {"id": "resp_n"}}
    events = render(Chunk(created), Failed(ModelOverloaded("busy")))
    assert events[-1]["response"]["id"] == "resp_n"
    assert events[-1]["sequence_number"] == 6  # after the upstream's own numbers


def test_created_at_is_the_answers_own_else_the_clock_the_surface_is_given() -> None:
    bare = Chunk({"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"content": "x"}}]})
    events = ResponseEvents(1234.9)
    started = json.loads(events.feed(bare)[0].decode().split("data: ")[1])
    assert started["response"]["created_at"] == 1234
    answer = {"id": "c", "model": "m", "choices": [{"message": {"content": "hi"}}]}
    assert to_response(answer, 99.5)["created_at"] == 99
    assert to_response({**answer, "created": 7}, 99.5)["created_at"] == 7
    assert render(chunk({"content": "x"}))[0]["response"]["created_at"] == 7
