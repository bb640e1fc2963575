"""The continuation's bookkeeping: what the client saw, and its chunks rebased onto the answer."""

from __future__ import annotations

from typing import Any

from edgeproxy.routing.faults import Fault, FaultKind
from edgeproxy.service.stream.continuation import Progress, continuation_body
from edgeproxy.upstream.call import Usage


def chunk(cid: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": cid,
        "created": 1 if cid == "first" else 2,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def usage_chunk(cid: str, prompt: int, completion: int) -> dict[str, Any]:
    usage = {"prompt_tokens": prompt, "completion_tokens": completion}
    return {"id": cid, "choices": [], "usage": usage}


def test_a_continuation_reads_as_the_rest_of_the_first_answer() -> None:
    progress = Progress()
    for delta in ({"role": "assistant", "content": ""}, {"content": "Hello "}, {"content": "wor"}):
        assert progress.owed(chunk("first", delta), hide_usage=False) is not None
    progress.failed(Fault(FaultKind.TRUNCATED, "cut"), "a", Usage(10, 2))
    assert progress.prefill() == "Hello wor"
    progress.continued()
    # The continuation's role event says nothing new; its chunks take the first id.
    assert (
        progress.owed(chunk("second", {"role": "assistant", "content": ""}), hide_usage=False)
        is None
    )
    rest = progress.owed(chunk("second", {"content": "ld!"}), hide_usage=False)
    assert rest == {
        "id": "first",
        "created": 1,
        "choices": [{"index": 0, "delta": {"content": "ld!"}, "finish_reason": None}],
    }
    end = progress.owed(chunk("second", {}, "stop"), hide_usage=False)
    assert end is not None
    assert end["choices"][0]["finish_reason"] == "stop"
    summed = progress.owed(usage_chunk("second", 12, 3), hide_usage=False)
    assert summed is not None
    assert summed["id"] == "first"
    assert summed["usage"] == {"prompt_tokens": 22, "completion_tokens": 5, "total_tokens": 27}
    assert progress.owed(usage_chunk("second", 12, 3), hide_usage=True) is None
    assert "".join(progress.text) == "Hello world!"


def test_whitespace_left_out_of_the_prefill_is_not_repeated() -> None:
    progress = Progress()
    progress.owed(chunk("first", {"content": "The quick "}), hide_usage=False)
    assert progress.prefill() == "The quick"  # providers reject a prefill ending in whitespace
    progress.continued()
    again = progress.owed(chunk("second", {"content": " brown"}), hide_usage=False)
    assert again is not None
    assert again["choices"][0]["delta"] == {"content": "brown"}
    later = progress.owed(chunk("second", {"content": " fox"}), hide_usage=False)
    assert later is not None
    assert later["choices"][0]["delta"] == {"content": " fox"}  # only the owed space went
    assert "".join(progress.text) == "The quick brown fox"


def test_the_continuation_body_appends_the_prefill() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "Hi"}], "stream": True}
    out = continuation_body(body, "Hello wor", {})
    assert out["messages"] == [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello wor"},
    ]
    assert body["messages"] == [{"role": "user", "content": "Hi"}]  # the original is untouched


def test_the_continuation_asks_only_for_what_is_left_of_the_clients_limit() -> None:
    body = {"model": "m", "messages": [], "max_tokens": 400, "max_completion_tokens": 50}
    progress = Progress()
    for _ in range(4):
        progress.owed(chunk("first", {"content": "x" * 100}), hide_usage=False)
    limits = progress.limits(body)  # 400 characters: about 100 tokens already written
    assert limits == {"max_tokens": 300, "max_completion_tokens": -50}
    out = continuation_body(body, progress.prefill(), limits)
    assert (out["max_tokens"], out["max_completion_tokens"]) == (300, 1)
    assert "max_tokens" not in continuation_body({"messages": []}, "x" * 400, {})


def test_many_short_deltas_count_one_token_each() -> None:
    progress = Progress()
    for word in ("a", " b", " c", " d", " e", " f"):
        progress.owed(chunk("first", {"content": word}), hide_usage=False)
    # 11 characters would be 3 tokens; 6 deltas are at least 6.
    assert progress.limits({"max_tokens": 10}) == {"max_tokens": 4}


def test_a_new_turn_continuation_gets_back_the_space_the_model_would_have_written() -> None:
    progress = Progress()
    progress.owed(chunk("first", {"content": "Her name was Taylor."}), hide_usage=False)
    assert progress.prefill() == "Her name was Taylor."
    progress.continued()
    first = progress.owed(chunk("second", {"content": "One"}), hide_usage=False)
    assert first is not None
    assert first["choices"][0]["delta"] == {"content": " One"}
    later = progress.owed(chunk("second", {"content": " day"}), hide_usage=False)
    assert later is not None
    assert later["choices"][0]["delta"] == {"content": " day"}
    assert "".join(progress.text) == "Her name was Taylor. One day"
