"""An incremental Server-Sent Events parser.

Follows the WHATWG event-stream rules: lines end in CRLF, LF or a lone CR;
lines starting with ``:`` are comments; ``data`` lines accumulate (joined by
``\\n``); a blank line dispatches the event; an event without data is dropped;
an unfinished event at end of stream is discarded. Bytes may be split anywhere,
including inside a CRLF pair or a multi-byte UTF-8 character, so lines are
decoded only once complete.
"""

from __future__ import annotations

from dataclasses import dataclass

_BOM = "\ufeff"


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

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._pending_cr = False  # a CR ended the last chunk; an LF may follow
        self._first_line = True
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None
        self.comments = 0  # count of comment lines seen (keepalives)

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """Consume ``chunk`` and return the events it completed, in order."""
        events: list[ServerSentEvent] = []
        if self._pending_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]  # second half of a CRLF split across chunks
        self._pending_cr = False
        self._buffer += chunk
        start = 0
        buf = self._buffer
        size = len(buf)
        index = 0
        while index < size:
            byte = buf[index]
            if byte == 0x0A or byte == 0x0D:
                line = bytes(buf[start:index])
                if byte == 0x0D:
                    if index + 1 < size:
                        if buf[index + 1] == 0x0A:
                            index += 1
                    else:
                        self._pending_cr = True
                start = index + 1
                event = self._line(line.decode("utf-8", errors="replace"))
                if event is not None:
                    events.append(event)
            index += 1
        del self._buffer[:start]
        return events

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
        self._data, self._event = [], ""
        retry, self._retry = self._retry, None
        if not data:
            return None
        return ServerSentEvent(
            data="\n".join(data), event=event or "message", id=self._id, retry=retry
        )
