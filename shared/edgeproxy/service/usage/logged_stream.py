"""A relayed stream that leaves its log record once it is over, however it ended.

It passes every event on unchanged and notes the first content chunk (the
time to first token) and how the stream ended: ``Closing`` (served),
``Failed`` (cut for good, or routing failed after the header hold), or
neither (the client left). ``aclose`` closes the relay first (its outcome
writes), then writes the record: after the last byte was sent.
"""

from __future__ import annotations

from typing import Protocol

from edgeproxy.service.stream.events import Chunk, Closing, Failed, StreamItem
from edgeproxy.service.usage.capture import stream_text
from edgeproxy.service.usage.entry import Entry, serving_attempt
from edgeproxy.service.usage.request_log import RequestLog
from edgeproxy.state.usage_log import RequestRecord


class Relayed(Protocol):
    headers: dict[str, str]

    def __aiter__(self) -> Relayed: ...

    async def __anext__(self) -> StreamItem: ...

    async def aclose(self) -> None: ...


class LoggedStream:
    """``inner``'s events; its record written by ``aclose`` (see the module doc)."""

    def __init__(self, inner: Relayed, entry: Entry, log: RequestLog) -> None:
        self._inner = inner
        self._entry = entry
        self._log = log
        self._end: Closing | Failed | None = None
        self.headers = inner.headers

    def __aiter__(self) -> LoggedStream:
        return self

    async def __anext__(self) -> StreamItem:
        item = await self._inner.__anext__()
        if isinstance(item, Chunk):
            self._entry.first_token()
            if self._entry.captures:
                self._entry.answer_parts.append(stream_text(item.data))
        elif isinstance(item, Closing | Failed):
            self._end = item
        return item

    async def aclose(self) -> None:
        """Close the relay, then write the record (once)."""
        try:
            await self._inner.aclose()
        finally:
            await self._log.write(self._entry, self._record())

    def _record(self) -> RequestRecord:
        entry, end = self._entry, self._end
        served_by = entry.run.trace.served_by
        if isinstance(end, Closing) and served_by is not None:
            attempt = serving_attempt(entry.run.trace.attempts, served_by)
            usage = (attempt.usage if attempt is not None else None) or {}
            return entry.served(
                served_by, usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)
            )
        if isinstance(end, Failed):
            if served_by is None:
                return entry.failed(end.error)
            return entry.served(served_by, 0, 0, cut=end.error)
        return entry.gone()
