"""A loopback OpenAI / Anthropic / Azure / Bedrock upstream that fails on command.

Serves ``POST /v1/chat/completions`` and ``POST /v1/completions`` (JSON and
SSE), ``POST /v1/embeddings``, ``GET /v1/models``, ``POST /v1/messages``
(Anthropic, JSON and SSE), ``POST /v1/messages/count_tokens`` (Anthropic's
count: ``mock_answers.prompt_tokens``), ``POST /v1/responses`` (the OpenAI
Responses API, JSON and typed SSE events; ``mock_responses``); Azure's
``POST /openai/deployments/{name}/chat/completions|embeddings?api-version=...``
(``api-key`` header); Bedrock's ``POST /model/{modelId}/converse`` and
``/converse-stream`` (AWS event-stream framing, SigV4-signed requests); see
``mock_routes``. Plus a control API on the same port:

    POST   /_mock/faults    {"faults": [<fault>, ...], "persistent": <fault> | null}
    DELETE /_mock/faults    clear queued and persistent faults
    GET    /_mock/requests  {"requests": [{method, path, headers, body, time, connection}]}
    DELETE /_mock/requests  clear the log

Queued faults apply to the next model requests (POSTs to the model paths)
in FIFO order, one each; ``persistent`` applies once the queue is
empty. Fault keys are documented in ``mock_faults``.

Python use (tests, ``make run``)::

    with MockUpstream("a") as upstream:
        upstream.set_faults([{"status": 429, "retry_after": "2"}])
        call_something(upstream.base_url)      # http://127.0.0.1:PORT/v1 (azure, bedrock: .url)
        assert upstream.requests()[0]["body"]["model"] == "gpt-4o"

Command line: ``python -m edgeproxy_dev.mock_upstream --port 9101 --name a``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import threading
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

from edgeproxy_dev.mock_faults import MockFault
from edgeproxy_dev.mock_server import MockServer

__all__ = ["MockFault", "MockServer", "MockUpstream", "main"]


class MockUpstream:
    """A ``MockServer`` running on its own event loop in a background thread."""

    def __init__(
        self,
        name: str = "mock",
        port: int = 0,
        *,
        host: str = "127.0.0.1",
        default_content: str | None = None,
        api_key: str | None = None,
        models: Sequence[str] = ("mock-model",),
    ) -> None:
        self.name = name
        self.server = MockServer(
            name, default_content=default_content, api_key=api_key, models=models
        )
        self._host = host
        self._port = port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port (known once started)."""
        return self.server.port

    @property
    def url(self) -> str:
        """The server root, e.g. ``http://127.0.0.1:PORT``."""
        return f"http://{self._host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The API base URL a deployment points at: ``http://127.0.0.1:PORT/v1``."""
        return self.url + "/v1"

    def start(self) -> MockUpstream:
        """Bind and serve in a background thread; returns once it accepts connections."""
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self.server.start(self._host, self._port))
            except BaseException as exc:  # reported to start()'s caller
                failure.append(exc)
                loop.close()
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self.server.close())
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

        self._thread = threading.Thread(target=run, name=f"mock-upstream-{self.name}", daemon=True)
        self._thread.start()
        ready.wait(10)
        if failure:
            raise failure[0]
        return self

    def stop(self) -> None:
        """Close every connection and the listener; wait for the thread to end."""
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        self._loop = None
        self._thread = None

    @property
    def open_connections(self) -> int:
        """Client connections the server currently holds (0 once clients hung up)."""
        return self.server.open_connections

    @property
    def peak_concurrency(self) -> int:
        """The most model requests this server was answering at once since it started."""
        return self.server.peak_busy

    def set_faults(
        self,
        faults: Sequence[MockFault | Mapping[str, Any]],
        persistent: MockFault | Mapping[str, Any] | None = None,
    ) -> None:
        """Replace the fault queue and the persistent fault (thread-safe)."""
        self.server.set_faults(faults, persistent)

    def clear(self) -> None:
        """Forget faults and the request log."""
        self.server.set_faults([], None)
        self.server.clear_requests()

    def requests(self) -> list[dict[str, Any]]:
        """A copy of the request log.

        Each entry: ``method``, ``path``, ``headers`` (names lower-cased),
        ``body`` (parsed JSON or ``None``), ``time`` (epoch seconds) and
        ``connection`` (a per-server connection number, to see keep-alive).
        """
        return self.server.requests()

    def __enter__(self) -> MockUpstream:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def main(argv: Sequence[str] | None = None) -> None:
    """Run one mock upstream in the foreground until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9101)
    parser.add_argument("--name", default="mock")
    parser.add_argument("--api-key", default=None, help="answer 401 unless this key is sent")
    parser.add_argument("--content", default=None, help="fixed answer text (default: echo)")
    args = parser.parse_args(argv)

    async def serve() -> None:
        server = MockServer(args.name, default_content=args.content, api_key=args.api_key)
        await server.start(args.host, args.port)
        print(f"mock upstream {args.name!r} on http://{args.host}:{server.port}/v1", flush=True)
        try:
            await asyncio.Event().wait()
        finally:
            await server.close()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())


if __name__ == "__main__":
    main()
