"""Mid-stream continuation: what the client was shown, and the request that continues it.

When a stream fails after its commit point and the core decides to continue it
(``routing/stream/continuation.py``: ``continuation: prefill`` on the pool or
its fallback chain, plain text of one choice, time left), the relay asks
a ``supports_prefill`` deployment to continue the answer: the original
messages plus an assistant message holding the text relayed so far. Its
stream is then relayed as the rest of the same answer: same ``id`` and
``created``, no second role event, joined on as ``routing/stream/remainder.py``
says (whitespace the client already saw not repeated, a new turn's lost
space put back), its output limit what is left of the client's, and usage
summed over every attempt.

    progress = Progress()
    chunk = progress.owed(chunk, hide_usage=False)   # None: nothing to send
    body = continuation_body(original_body, progress.prefill(), progress.limits(original_body))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from edgeproxy.routing.faults import Fault
from edgeproxy.routing.stream.remainder import delivered_tokens, joined, remaining_limits
from edgeproxy.service.attempts import usage_only
from edgeproxy.upstream.call import Usage

_IDENTITY = ("id", "created")


def continuation_body(
    body: Mapping[str, Any], prefill: str, limits: Mapping[str, int]
) -> dict[str, Any]:
    """The original body with ``prefill`` as a trailing assistant message and ``limits``
    (``Progress.limits``: what is left of each output limit) in place of its own."""
    messages = list(body.get("messages") or [])
    out = {**body, "messages": [*messages, {"role": "assistant", "content": prefill}]}
    out.update({name: max(1, left) for name, left in limits.items()})
    return out


def added(a: Usage | None, b: Usage | None) -> Usage | None:
    """The sum of two usage reports (None only when neither exists)."""
    if a is None or b is None:
        return a or b
    return Usage(
        a.prompt_tokens + b.prompt_tokens,
        a.completion_tokens + b.completion_tokens,
        a.cache_read_tokens + b.cache_read_tokens,
        a.cache_write_tokens + b.cache_write_tokens,
    )


@dataclass(slots=True)
class Progress:
    """One relayed answer across its attempts: what the client saw and what it cost."""

    text: list[str] = field(default_factory=list)  # choice 0's content, as sent
    shown: str = ""  # choice 0's content at the current continuation's cut
    rest: str = ""  # the current continuation's content, as the upstream wrote it
    identity: dict[str, Any] = field(default_factory=dict)  # id/created of the first chunk
    resumed: bool = False  # the current attempt is a continuation
    usage: Usage | None = None  # what the attempts before the current one reported
    first_fault: Fault | None = None  # the error the client gets if no continuation works
    first_deployment: str | None = None
    cut: set[str] = field(default_factory=set)  # deployments whose stream was cut
    continuations: int = 0  # continuations started so far
    ended_by_length: bool = False  # cut with the client's output limit used up

    def prefill(self) -> str:
        """The assistant prefill (providers reject one that ends in whitespace)."""
        return "".join(self.text).rstrip()

    def limits(self, body: Mapping[str, Any]) -> dict[str, int]:
        """What is left of each of ``body``'s output limits after the text shown so far."""
        return remaining_limits(body, delivered_tokens("".join(self.text), len(self.text)))

    def failed(self, fault: Fault, deployment: str, usage: Usage | None) -> None:
        """The current attempt failed after the commit; its reported tokens still count."""
        if self.first_fault is None:
            self.first_fault, self.first_deployment = fault, deployment
        self.cut.add(deployment)
        self.usage = added(self.usage, usage)

    def owed(self, chunk: dict[str, Any], *, hide_usage: bool) -> dict[str, Any] | None:
        """The chunk the client is owed for ``chunk``, or None to send nothing."""
        if usage_only(chunk):
            if hide_usage:
                return None  # we asked for it to count tokens; the client did not
            if self.usage is not None:
                total = added(self.usage, Usage.from_openai(chunk.get("usage")))
                assert total is not None
                chunk = {**chunk, "usage": total.openai_fields()}
            return {**chunk, **self.identity} if self.resumed else chunk
        if not self.identity:
            self.identity = {k: chunk[k] for k in _IDENTITY if k in chunk}
        if self.resumed:
            rebased = self._rebased(chunk)
            if rebased is None:
                return None
            chunk = rebased
        for choice in chunk.get("choices") or []:
            if isinstance(choice, Mapping) and choice.get("index", 0) == 0:
                delta = choice.get("delta")
                content = delta.get("content") if isinstance(delta, Mapping) else None
                if not isinstance(delta, Mapping):
                    content = choice.get("text")  # a legacy text completion's chunk
                if isinstance(content, str) and content:
                    self.text.append(content)
        return chunk

    def continued(self) -> None:
        """The next chunks are a continuation's, joined on to the text shown so far."""
        self.resumed = True
        self.shown, self.rest = "".join(self.text), ""

    def _rebased(self, chunk: dict[str, Any]) -> dict[str, Any] | None:
        """A continuation's chunk as part of the first answer (None: it says nothing new)."""
        out = {**chunk, **self.identity}
        choices: list[Any] = []
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, Mapping):
                continue
            delta = dict(choice.get("delta") or {})
            delta.pop("role", None)  # the client had its role event already
            content = delta.get("content")
            if isinstance(content, str) and choice.get("index", 0) == 0:
                delta["content"] = joined(self.shown, self.rest, content)
                self.rest += content
            if not any(v for v in delta.values()) and not choice.get("finish_reason"):
                continue
            choices.append({**choice, "delta": delta})
        if not choices:
            return None
        out["choices"] = choices
        return out
