"""The one stream driver of the surfaces: the relay's typed events in, a surface's SSE out.

Every surface renders a stream the same way; only the frames differ:

    Chunk      -> renderer.chunk(data)      (a Responses API event: renderer.event)
    Keepalive  -> the SSE comment ``: keepalive``
    Closing    -> renderer.closing(item)    the end: nothing is rendered after it
    Failed     -> renderer.failed(item)     the end: nothing is rendered after it
    (the source ended with neither)         renderer.unfinished(): the one fallback

``drive`` closes the source when it is done or when the client goes away,
so the relay settles the upstream attempt (success, failure or abandon) at
once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from typing import Any

from edgeproxy.routing.stream.completeness import responses_event
from edgeproxy.service.stream.events import Chunk, Closing, Failed, Keepalive, StreamItem

KEEPALIVE = b": keepalive\n\n"
UNFINISHED = "The stream ended before it was complete."


class Renderer(ABC):
    """One stream's renderer: the end-of-stream rule here, the frames in each surface's subclass."""

    def __init__(self) -> None:
        self._ended = False

    def feed(self, item: StreamItem) -> list[bytes]:
        """The frames for one relay event (none once the stream ended)."""
        if self._ended:
            return []
        if isinstance(item, Chunk):
            kind = responses_event(item.data)
            return self.chunk(item.data) if kind is None else self.event(kind, item.data)
        if isinstance(item, Keepalive):
            return [KEEPALIVE]
        self._ended = True
        if isinstance(item, Closing):
            return self.closing(item)
        assert isinstance(item, Failed)
        return self.failed(item)

    def close(self) -> list[bytes]:
        """The frames owed when the source ends: the fallback if it ended without closing."""
        if self._ended:
            return []
        self._ended = True
        return self.unfinished()

    @abstractmethod
    def chunk(self, data: dict[str, Any]) -> list[bytes]:
        """One chat chunk."""

    def event(self, kind: str, data: dict[str, Any]) -> list[bytes]:
        """One native Responses API event (a deployment serving ``/v1/responses``)."""
        return self.chunk(data)

    @abstractmethod
    def closing(self, item: Closing) -> list[bytes]:
        """The end of a complete answer."""

    @abstractmethod
    def failed(self, item: Failed) -> list[bytes]:
        """The in-band error that ends the stream."""

    @abstractmethod
    def unfinished(self) -> list[bytes]:
        """The end of a source that stopped without ``Closing`` or ``Failed``."""


async def drive(source: AsyncIterator[StreamItem], renderer: Renderer) -> AsyncIterator[bytes]:
    """Render ``source`` with ``renderer`` as it arrives; closes ``source`` whatever happens."""
    try:
        async for item in source:
            for data in renderer.feed(item):
                yield data
        for data in renderer.close():
            yield data
    finally:
        aclose = getattr(source, "aclose", None)
        if aclose is not None:
            await aclose()
