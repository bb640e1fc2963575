from __future__ import annotations

from typing import Any

from edgeproxy.routing.stream.completeness import Complete, StreamTracker, Truncated


def chunk(
    delta: dict[str, Any] | None = None, finish: str | None = None, index: int = 0, **extra: Any
) -> dict[str, Any]:
    return {"choices": [{"index": index, "delta": delta or {}, "finish_reason": finish}], **extra}


def run(chunks: list[dict[str, Any]], saw_done: bool) -> tuple[StreamTracker, Complete | Truncated]:
    tracker = StreamTracker()
    for c in chunks:
        tracker.feed(c)
    if saw_done:
        tracker.end()
    return tracker, tracker.outcome()


def test_role_and_empty_content_do_not_commit_reasoning_content_and_tools_do() -> None:
    for delta in (
        {"reasoning_content": "hm"},
        {"reasoning": "hm"},
        {"content": "Hi"},
        {"tool_calls": [{"index": 0, "function": {"name": "f"}}]},
    ):
        tracker = StreamTracker()
        assert not tracker.feed(chunk({"role": "assistant", "content": ""}))
        assert tracker.outcome() == Truncated(committed=False)
        assert tracker.feed(chunk(delta))
        assert tracker.committed
        assert not tracker.feed(chunk({"content": "more"}))  # commits only once


def test_clean_stream_is_complete_without_anomalies() -> None:
    _, out = run([chunk({"content": "Hi"}), chunk(finish="stop")], saw_done=True)
    assert out == Complete((), None, {0: "stop"})


def test_finished_without_done_is_complete() -> None:
    _, out = run([chunk({"content": "Hi"}), chunk(finish="length")], saw_done=False)
    assert isinstance(out, Complete)
    assert out.anomalies == ("missing_done",)
    assert out.finish_reasons == {0: "length"}


def test_done_without_finish_reason_infers_stop_or_tool_calls() -> None:
    _, out = run([chunk({"content": "Hi"})], saw_done=True)
    assert isinstance(out, Complete)
    assert out.anomalies == ("missing_finish_reason",)
    assert out.inferred_finish_reason == "stop"
    assert out.finish_reasons == {0: "stop"}
    _, tools = run([chunk({"tool_calls": [{"index": 0, "id": "c1"}]})], saw_done=True)
    assert isinstance(tools, Complete)
    assert tools.inferred_finish_reason == "tool_calls"


def test_empty_answer_is_an_answer() -> None:
    _, out = run([chunk({"role": "assistant", "content": ""}), chunk(finish="stop")], True)
    assert isinstance(out, Complete)
    assert out.anomalies == ("empty",)
    _, bare = run([], saw_done=True)
    assert isinstance(bare, Complete)
    assert bare.anomalies == ("missing_finish_reason", "empty")


def test_dropped_connection_is_truncated_and_says_whether_committed() -> None:
    _, before = run([chunk({"role": "assistant"})], saw_done=False)
    assert before == Truncated(committed=False)
    _, after = run([chunk({"content": "Hal"})], saw_done=False)
    assert after == Truncated(committed=True)
    _, nothing = run([], saw_done=False)
    assert isinstance(nothing, Truncated)


def test_every_choice_must_finish() -> None:
    chunks = [
        chunk({"content": "a"}, index=0),
        chunk({"content": "b"}, index=1),
        chunk(finish="stop", index=0),
    ]
    _, out = run(chunks, saw_done=False)
    assert isinstance(out, Truncated)
    _, done = run(chunks, saw_done=True)
    assert isinstance(done, Complete)
    assert done.finish_reasons == {0: "stop", 1: "stop"}
    assert "missing_finish_reason" in done.anomalies


def test_a_usage_chunk_changes_nothing_and_only_unstated_reasons_count_as_inferred() -> None:
    chunks = [
        chunk({"content": "a"}, index=0),
        chunk({"content": "b"}, index=1),
        chunk(finish="length", index=0),
        {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}},
    ]
    tracker, out = run(chunks, saw_done=True)
    assert isinstance(out, Complete)
    assert out.inferred(tracker.finish_reasons) == {1: "stop"}
    assert Complete((), None, {0: "stop"}).inferred({0: "stop"}) == {}


def test_complete_may_end_at_either_signal() -> None:
    tracker = StreamTracker()
    assert not tracker.complete
    tracker.feed(chunk({"content": "a"}, finish="stop"))
    assert (tracker.finished, tracker.complete, tracker.saw_done) == (True, True, False)
    other = StreamTracker()
    other.feed(chunk({"content": "a"}))
    other.end()
    assert (other.finished, other.complete, other.saw_done) == (False, True, True)


def event(kind: str, **fields: Any) -> dict[str, Any]:
    """A Responses API stream event."""
    return {"type": kind, "sequence_number": 0, **fields}


CREATED = event("response.created", response={"id": "resp_1", "status": "in_progress"})
TEXT_ITEM = event("response.output_item.added", item={"type": "message", "content": []})
CALL_ITEM = event("response.output_item.added", item={"type": "function_call", "name": "f"})


def test_responses_events_commit_at_their_first_output() -> None:
    for committing in (
        event("response.output_text.delta", delta="Hi"),
        event("response.function_call_arguments.delta", delta="{"),
        event("response.reasoning_summary_text.delta", delta="hm"),
        event("response.output_item.done", item={"type": "web_search_call"}),
        CALL_ITEM,
    ):
        tracker = StreamTracker()
        for before in (CREATED, event("response.in_progress"), TEXT_ITEM):
            assert not tracker.feed(before)
        assert tracker.outcome() == Truncated(committed=False)
        assert tracker.feed(committing), committing["type"]


def test_only_the_terminal_event_completes_a_responses_stream() -> None:
    shown = [CREATED, event("response.output_text.delta", delta="Hi")]
    _, out = run([*shown, event("response.completed", response={})], saw_done=False)
    assert out == Complete((), None, {0: "stop"})  # no [DONE] in this protocol: no anomaly
    _, out = run([*shown, event("response.incomplete", response={})], saw_done=False)
    assert out == Complete((), None, {0: "length"})
    # Without it the stream is cut, even if a [DONE] arrived.
    assert run(shown, saw_done=False)[1] == Truncated(committed=True)
    assert run(shown, saw_done=True)[1] == Truncated(committed=True)


def test_a_responses_stream_with_a_function_call_finishes_as_tool_calls() -> None:
    tracker, out = run([CREATED, CALL_ITEM, event("response.completed")], saw_done=False)
    assert tracker.tool_calls
    assert out == Complete((), None, {0: "tool_calls"})


def test_a_legacy_completion_commits_at_its_first_text() -> None:
    tracker = StreamTracker()
    assert not tracker.feed({"choices": [{"index": 0, "text": "", "finish_reason": None}]})
    assert tracker.feed({"choices": [{"index": 0, "text": "Hi", "finish_reason": None}]})
    tracker.feed({"choices": [{"index": 0, "text": "", "finish_reason": "length"}]})
    assert tracker.finished


def test_an_untrusted_end_marker_without_a_finish_reason_is_a_cut() -> None:
    from edgeproxy.routing.stream.completeness import StreamTracker, Truncated

    tracker = StreamTracker(trust_end=False)
    tracker.feed({"choices": [{"index": 0, "delta": {"content": "Hi"}}]})
    tracker.end()
    assert tracker.outcome() == Truncated(committed=True)
    tracker.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    assert tracker.complete  # a finish reason still completes it
