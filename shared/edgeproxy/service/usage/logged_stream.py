"""A relayed stream that leaves its log record once it is over, however it ended.

It passes every event on unchanged and notes the first content chunk (the
time to first token) and how the stream ended: ``Closing`` (served),
``Failed`` (cut for good, or routing failed after the header hold), or
neither (the client left). ``aclose`` closes the relay first (its outcome
writes), then writes the record: without holding back the response's end.
"""

from __future__ import annotations

import asyncio
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
    """``inner``'s events; its record written by ``aclose`` (see the module doc).

    ``aclose`` is called twice on a stream that ran to its end: by the
    surface's driver right after the last event (before the response's final
    frame: the record's write starts then but is not awaited, so it cannot
    hold the end of the response back), and by the response once it is over,
    which awaits the write (on the streaming Lambda it must land before the
    invocation ends). A stream that never reached its end is closed once,
    after the response: that call writes and awaits.
    """

    def __init__(self, inner: Relayed, entry: Entry, log: RequestLog) -> None:
        self._inner = inner
        self._entry = entry
        self._log = log
        self._end: Closing | Failed | None = None
        self._write: asyncio.Future[None] | None = None
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
        """Close the relay, then write the record (once; see the class doc for when)."""
        if self._write is None:
            try:
                await self._inner.aclose()
            finally:
                self._write = asyncio.ensure_future(self._log.write(self._entry, self._record()))
            if self._end is not None:
                return  # called at the body's end: the response's own close awaits the write
        await asyncio.shield(self._write)

    def _record(self) -> RequestRecord:
        entry, end = self._entry, self._end
        served_by = entry.run.trace.served_by
        if isinstance(end, Closing) and served_by is not None:
            attempt = serving_attempt(entry.run.trace.attempts, served_by)
            # What the key's spend counted: the reported usage, else the stream's estimate.
            usage = (attempt.counted or attempt.usage if attempt is not None else None) or {}
            return entry.served(
                served_by,
                usage.get("prompt_tokens", 0),
                usage.get("completion_tokens", 0),
                estimated=end.estimated,
                cache=(usage.get("cache_read_tokens", 0), usage.get("cache_write_tokens", 0)),
            )
        if isinstance(end, Failed):
            if served_by is None:
                return entry.failed(end.error)
            return entry.served(served_by, 0, 0, cut=end.error)
        return entry.gone()
