"""An incremental Server-Sent Events parser.

Follows the WHATWG event-stream rules: lines end in CRLF, LF or a lone CR;
lines starting with ``:`` are comments; ``data`` lines accumulate (joined by
``\\n``); a blank line dispatches the event; an event without data is dropped;
an unfinished event at end of stream is discarded. Bytes may be split anywhere,
including inside a CRLF pair or a multi-byte UTF-8 character, so lines are
decoded only once complete.

Linear time: each byte is scanned once (line ends are found by a compiled
pattern over the new chunk only; an unfinished line waits in a buffer that is
appended to, never rescanned). Bounded memory: a line, or an event's
accumulated data, longer than ``max_event_bytes`` raises an OVERSIZE fault.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from edgeproxy.routing.faults import FaultKind
from edgeproxy.upstream.errors import fault

_BOM = "\ufeff"
_EOL = re.compile(rb"\r\n|\r|\n")
DEFAULT_MAX_EVENT_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    """One dispatched event. ``event`` defaults to ``"message"`` as in browsers."""

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


class SSEParser:
    """Turns byte chunks into events; keep one parser per stream.

    >>> parser = SSEParser()
    >>> parser.feed(b'data: {"a"')
    []
    >>> parser.feed(b': 1}\\n\\n')
    [ServerSentEvent(data='{"a": 1}', event='message', id=None, retry=None)]
    """

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        self._partial = bytearray()  # the unfinished last line
        self._pending_cr = False  # a CR ended the last chunk; an LF may follow
        self._first_line = True
        self._data: list[str] = []
        self._size = 0  # bytes of the event being accumulated
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None
        self._max = max_event_bytes
        self.comments = 0  # count of comment lines seen (keepalives)

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """Consume ``chunk`` and return the events it completed, in order.

        Raises ``UpstreamFault`` (OVERSIZE) when a line or an event outgrows
        ``max_event_bytes``.
        """
        events: list[ServerSentEvent] = []
        if self._pending_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]  # second half of a CRLF split across chunks
        self._pending_cr = False
        start = 0
        for end in _EOL.finditer(chunk):
            piece = chunk[start : end.start()]
            if self._partial:
                self._partial += piece
                piece = bytes(self._partial)
                self._partial.clear()
            self._check(len(piece))
            start = end.end()
            if start == len(chunk) and end.group() == b"\r":
                self._pending_cr = True
            event = self._line(piece.decode("utf-8", errors="replace"))
            if event is not None:
                events.append(event)
        self._partial += chunk[start:]
        self._check(len(self._partial))
        return events

    def _check(self, line_bytes: int) -> None:
        if line_bytes + self._size > self._max:
            raise fault(
                FaultKind.OVERSIZE,
                f"an event of the upstream's stream is larger than {self._max} bytes"
                " (gateway.upstream_limits.event_bytes)",
            )

    def _line(self, line: str) -> ServerSentEvent | None:
        if self._first_line:
            self._first_line = False
            line = line.removeprefix(_BOM)
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            self.comments += 1
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._size += len(value) + 1
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self._retry = int(value)
        return None

    def _dispatch(self) -> ServerSentEvent | None:
        data, event = self._data, self._event
        self._data, self._event, self._size = [], "", 0
        retry, self._retry = self._retry, None
        if not data:
            return None
        return ServerSentEvent(
            data="\n".join(data), event=event or "message", id=self._id, retry=retry
        )
