"""Whether an upstream stream was complete, judged no stricter than the provider's SDK.

The one judge of a stream: the upstream stream feeds it every OpenAI
chat-completion (or legacy ``text_completion``) chunk it hands out and tells
it when the end marker arrived.
The stream is *committed* at the first chunk that shows the client something
(reasoning, content, a tool call or completion text): before that a failure may still move to
another deployment, after it the failure ends the stream in-band.

At the end, ``outcome()`` says:

- every choice finished: complete, even without ``[DONE]`` (``missing_done``);
- ``[DONE]`` arrived but a choice never finished: complete, the finish
  reason read from the output (``tool_calls`` or ``stop``;
  ``missing_finish_reason``);
- nothing shown at all: still an answer (``empty``);
- neither finished nor ``[DONE]``: truncated.

A tracker told not to trust the end marker (``trust_end=False``, the
deployment's ``trust_stream_end: false``: servers such as llama.cpp's end a
running stream with ``[DONE]`` when they drop it) reads ``[DONE]`` without
every finish reason as truncated too, so failover or continuation applies.

An event that is not valid JSON after the commit point is skipped and
recorded (``malformed_event``) as long as the stream then completes; before
the commit it is a transient failure (``skip_malformed`` says which).

A Responses API stream (``/v1/responses`` passed through to a native
deployment) is a sequence of typed events instead, judged by the same rules:
it commits at its first output (a ``*.delta`` event, a function call item, or
any finished output item), and only its terminal event (``response.completed``
or ``response.incomplete``) completes it; it has no ``[DONE]`` to fall back on.
``response.failed`` and ``error`` events are failures the adapter raises.

Token counts are not judged here: the provider's adapter reads them
(``upstream.call.Usage``), since not every protocol carries them in chunks.

Usage::

    tracker = StreamTracker()
    for chunk in chunks:
        tracker.feed(chunk)
    tracker.end()
    result = tracker.outcome()
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

MISSING_DONE = "missing_done"
MISSING_FINISH_REASON = "missing_finish_reason"
EMPTY = "empty"
MALFORMED_EVENT = "malformed_event"
# Responses API terminal events and the finish reason each amounts to.
TERMINAL_EVENTS = {"response.completed": "stop", "response.incomplete": "length"}


def responses_event(chunk: Mapping[str, Any]) -> str | None:
    """The event type when ``chunk`` is a Responses API event (not a chat chunk); else None.

    The one test of it: the upstream adapter, this tracker and the Responses
    surface all ask here.
    """
    kind = chunk.get("type")
    return kind if isinstance(kind, str) and "choices" not in chunk else None


@dataclass(frozen=True, slots=True)
class Complete:
    """A complete stream; ``finish_reasons`` per choice index, inferred ones included."""

    anomalies: tuple[str, ...] = ()
    inferred_finish_reason: str | None = None
    finish_reasons: Mapping[int, str] = field(default_factory=dict)

    def inferred(self, stated: Mapping[int, str]) -> dict[int, str]:
        """The finish reasons the upstream did not state (given those it did)."""
        return {i: r for i, r in sorted(self.finish_reasons.items()) if i not in stated}


@dataclass(frozen=True, slots=True)
class Truncated:
    """A stream that stopped before it was complete (a dropped connection)."""

    committed: bool


def _nonempty(value: object) -> bool:
    return isinstance(value, str | list | dict) and len(value) > 0


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class StreamTracker:
    """Follows one attempt's stream chunk by chunk; pure, no I/O."""

    def __init__(self, *, trust_end: bool = True) -> None:
        self.trust_end = trust_end  # False: [DONE] alone does not complete a stream
        self.committed = False
        self.tool_calls = False
        self.saw_done = False
        self.finish_reasons: dict[int, str] = {}
        self.choices: set[int] = set()
        self.skipped = 0  # malformed events skipped after the commit
        self.events = False  # a Responses API event stream: only its terminal event completes it

    def skip_malformed(self) -> bool:
        """A malformed event arrived: True if it is skipped (an anomaly), False if fatal.

        Before the commit nothing was shown, so the attempt fails and another
        deployment may answer; after it, one bad event must not cost the answer.
        """
        if not self.committed:
            return False
        self.skipped += 1
        return True

    def feed(self, chunk: Mapping[str, Any]) -> bool:
        """Account for one parsed chunk; returns True if this chunk committed the stream."""
        was_committed = self.committed
        kind = responses_event(chunk)
        if kind is not None:
            self._feed_event(kind, chunk)
            return self.committed and not was_committed
        choices = chunk.get("choices")
        for choice in choices if isinstance(choices, list) else []:
            if isinstance(choice, Mapping):
                self._feed_choice(choice)
        return self.committed and not was_committed

    def end(self) -> None:
        """The protocol's end marker (``[DONE]``, ``message_stop``) arrived."""
        self.saw_done = True

    def _feed_event(self, kind: str, event: Mapping[str, Any]) -> None:
        self.events = True
        self.choices.add(0)  # one answer, as choice 0
        item = event.get("item")
        if isinstance(item, Mapping) and item.get("type") == "function_call":
            self.tool_calls = True
            self.committed = True  # the call's name is output the client was shown
        if kind.endswith(".delta") or kind == "response.output_item.done":
            self.committed = True
        if kind in TERMINAL_EVENTS:
            reason = TERMINAL_EVENTS[kind]
            self.finish_reasons[0] = (
                "tool_calls" if reason == "stop" and self.tool_calls else reason
            )

    @property
    def finished(self) -> bool:
        """Every choice seen so far has a finish reason."""
        return bool(self.choices) and self.choices <= self.finish_reasons.keys()

    @property
    def complete(self) -> bool:
        """The stream may end here without being a failure."""
        return self.finished or (self.saw_done and not self.events and self.trust_end)

    def _feed_choice(self, choice: Mapping[str, Any]) -> None:
        index = _int(choice.get("index"))
        self.choices.add(index)
        delta = choice.get("delta")
        if isinstance(delta, Mapping):
            if _nonempty(delta.get("tool_calls")) or _nonempty(delta.get("function_call")):
                self.tool_calls = True
                self.committed = True
            if any(
                _nonempty(delta.get(name)) for name in ("content", "reasoning_content", "reasoning")
            ):
                self.committed = True
        if _nonempty(choice.get("text")):  # a legacy text completion's chunk
            self.committed = True
        reason = choice.get("finish_reason")
        if isinstance(reason, str) and reason:
            self.finish_reasons[index] = reason

    def outcome(self) -> Complete | Truncated:
        """The verdict once the stream ended."""
        finished = self.finished
        if not self.complete:
            return Truncated(committed=self.committed)
        anomalies: list[str] = []
        if not self.saw_done and not self.events:  # Responses streams have no [DONE]
            anomalies.append(MISSING_DONE)
        reasons = dict(self.finish_reasons)
        inferred = None
        if not finished:
            inferred = "tool_calls" if self.tool_calls else "stop"
            for index in self.choices or {0}:
                reasons.setdefault(index, inferred)
            anomalies.append(MISSING_FINISH_REASON)
        if not self.committed:
            anomalies.append(EMPTY)
        if self.skipped:
            anomalies.append(MALFORMED_EVENT)
        return Complete(tuple(anomalies), inferred, reasons)
