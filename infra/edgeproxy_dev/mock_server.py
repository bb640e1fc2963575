"""The mock upstream's asyncio server: routes, faults, request log.

State (faults, log) is guarded by a ``threading.Lock`` so that a test thread
can change it while the server's own loop runs in another thread; nothing
awaits while holding it.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from edgeproxy_dev import mock_answers as answers
from edgeproxy_dev import mock_bedrock as bedrock
from edgeproxy_dev import mock_eventstream as eventstream
from edgeproxy_dev import mock_hostile as hostile
from edgeproxy_dev import mock_http as http
from edgeproxy_dev import mock_responses as responses
from edgeproxy_dev import mock_tools as tools
from edgeproxy_dev.mock_faults import MockFault, anthropic_error, openai_error
from edgeproxy_dev.mock_routes import Route, authorized, resolve

_BAD_EVENT = b'data: {"choices": [{"delta": \n\n'
_ANTHROPIC_STOP = b'event: message_stop\ndata: {"type": "message_stop"}\n\n'


QUOTA_PATHS = frozenset({"/v1/key", "/v1/quota"})  # OpenRouter-style and a generic JSON one
HEALTHY_QUOTA = {"data": {"remaining": 1000, "limit": 1000, "limit_remaining": 1000.0, "usage": 0}}


class MockServer:
    """One mock upstream on the current event loop (see ``mock_upstream``)."""

    def __init__(
        self,
        name: str,
        *,
        default_content: str | None = None,
        api_key: str | None = None,
        models: Sequence[str] = ("mock-model",),
    ) -> None:
        self.name = name
        self.port = 0
        self._default_content = default_content
        self._api_key = api_key
        self._models = list(models)
        self._lock = threading.Lock()
        self._queue: deque[MockFault] = deque()
        self._persistent: MockFault | None = None
        self._log: list[dict[str, Any]] = []
        self._seq = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._connections = 0  # numbers connections so the log shows keep-alive reuse
        self._busy = 0  # model requests being answered now (capacity caps: peak_busy)
        self.peak_busy = 0

    async def start(self, host: str, port: int) -> None:
        """Bind (``port=0``: a free one) and start accepting connections."""
        self._server = await asyncio.start_server(self._connection, host, port)
        self.port = self._server.sockets[0].getsockname()[1]

    @property
    def open_connections(self) -> int:
        """Connections currently held open by clients."""
        return len(self._tasks)

    async def close(self) -> None:
        """Stop listening and drop every open connection (stalled ones included)."""
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    def set_faults(
        self, faults: Sequence[MockFault | Mapping[str, Any]], persistent: Any = None
    ) -> None:
        """Replace queued and persistent faults; raises ValueError on unknown keys."""
        parsed = [MockFault.parse(f) for f in faults]
        steady = None if persistent is None else MockFault.parse(persistent)
        with self._lock:
            self._queue = deque(parsed)
            self._persistent = steady

    def requests(self) -> list[dict[str, Any]]:
        """A copy of the request log."""
        with self._lock:
            return [dict(entry) for entry in self._log]

    def clear_requests(self) -> None:
        """Empty the request log."""
        with self._lock:
            self._log.clear()

    def _next(self) -> tuple[MockFault, int]:
        with self._lock:
            self._seq += 1
            fault = self._queue.popleft() if self._queue else self._persistent
            return fault or MockFault(), self._seq

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        self._connections += 1
        connection = self._connections
        try:
            while True:
                request = await http.read_request(reader)
                if request is None or not await self._handle(request, connection, reader, writer):
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # the client went away; nothing to answer
        except asyncio.CancelledError:
            # Only close() cancels these tasks. Ending normally matters: on 3.11
            # asyncio.streams' done-callback calls task.exception(), which raises
            # for a cancelled task and logs a spurious error.
            pass
        finally:
            if task is not None:
                self._tasks.discard(task)
            writer.close()

    async def _handle(
        self,
        request: http.Request,
        connection: int,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> bool:
        """Answer one request; ``False`` closes the connection."""
        if request.path.startswith("/_mock/"):
            await self._control(request, writer)
            return request.keep_alive
        body = request.json()
        with self._lock:
            self._log.append(
                {
                    "method": request.method,
                    "path": request.path,
                    "headers": dict(request.headers),
                    "body": body,
                    "query": dict(request.query),
                    "time": time.time(),
                    "connection": connection,
                }
            )
        route = resolve(request) if request.method == "POST" else None
        if request.method == "GET" and request.path == "/v1/models":
            data = [{"id": m, "object": "model", "owned_by": self.name} for m in self._models]
            await http.write_json(writer, 200, {"object": "list", "data": data}, {})
        elif request.method == "GET" and request.path in QUOTA_PATHS:
            # A provider's quota endpoint: the next fault's body and status (quota fetchers).
            fault, _ = self._next()
            if fault.stall:
                await http.wait_for_close(reader)
                return False
            payload = fault.body if fault.body is not None else HEALTHY_QUOTA
            await http.write_json(writer, fault.status, payload, dict(fault.headers))
        elif route is None:
            await http.write_json(writer, 404, openai_error(404, {"message": "Not found."}), {})
        elif not authorized(route, request, self._api_key):
            await self._unauthorized(route, writer)
        else:
            fault, seq = self._next()
            fault = hostile.echoing(fault, request.headers)
            if not isinstance(body, dict):
                body = {}
            if (
                fault.over_chars is not None
                and len(answers.last_user_text(body)) <= fault.over_chars
            ):
                fault = MockFault()  # a prompt the server's window holds
            self._busy += 1
            self.peak_busy = max(self.peak_busy, self._busy)
            try:
                answered = await self._answer(route, body, fault, seq, reader, writer)
            finally:
                self._busy -= 1
            return answered and request.keep_alive
        return request.keep_alive

    async def _unauthorized(self, route: Route, writer: asyncio.StreamWriter) -> None:
        if route.protocol == "bedrock":
            override = {"code": "UnrecognizedClientException", "message": "Request not signed."}
            headers, error = bedrock.error(403, override)
            await http.write_json(writer, 403, error, headers)
            return
        await http.write_json(
            writer, 401, (anthropic_error if route.anthropic else openai_error)(401, None), {}
        )

    async def _answer(
        self,
        route: Route,
        body: dict[str, Any],
        fault: MockFault,
        seq: int,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> bool:
        anthropic = route.anthropic
        if fault.reset:
            http.reset(writer)
            return False
        if fault.stall:
            await http.wait_for_close(reader)
            return False
        await asyncio.sleep(fault.latency_ms / 1000)
        if hostile.is_hostile(fault):
            return await hostile.answer(fault, writer, reader)
        if route.protocol == "bedrock":
            return await self._bedrock(route, body, fault, seq, reader, writer)
        headers = self._headers(anthropic, fault, seq)
        if fault.reject_prefill and answers.prefill(body) is not None:
            error = {"message": "This model does not support assistant message prefill."}
            make = anthropic_error if anthropic else openai_error
            await http.write_json(writer, 400, make(400, error), headers)
            return True
        if fault.status >= 300:  # an error, or a redirect (its Location in fault.headers)
            make_error = anthropic_error if anthropic else openai_error
            error = fault.body if fault.body is not None else make_error(fault.status, fault.error)
            await http.write_json(writer, fault.status, error, headers)
            return True
        if route.operation == "count_tokens":
            payload = {"input_tokens": answers.prompt_tokens(body)}
            await http.write_json(writer, 200, fault.body or payload, headers)
            return True
        model = route.model or str(body.get("model") or "mock-model")  # azure: its deployment
        malformed = hostile.nan_json(fault, anthropic, (self.name, seq, model, "n", "stop", 1))
        if route.operation == "embeddings":
            payload = (
                answers.embeddings(model, body.get("input", ""))
                if fault.body is None
                else fault.body
            )
            await http.write_json(writer, fault.status, payload, headers, raw=malformed)
            return True
        native = route.operation == "responses"
        said = (answers.last_user_text(body) or responses.input_text(body))[:200]
        content = fault.content if fault.content is not None else self._content(body, said)
        prompt = (responses.prompt_tokens if native else answers.prompt_tokens)(body)
        finish = fault.finish_reason
        if fault.obey_max_tokens:
            content, finish = answers.limited(content, finish, body)
        args: answers.Args = (self.name, seq, model, content, finish, prompt)
        answered = (responses.tool_output if native else answers.tool_result)(body) is not None
        call = fault.tool_call or tools.required_call(body, said, answered)
        if native or call is not None:
            return await self._tools_or_native(route, args, call, body, fault, reader, writer)
        if not body.get("stream"):
            await asyncio.sleep(fault.first_token_delay_ms / 1000)
            build = answers.anthropic_message if anthropic else answers.chat_completion
            if route.operation == "completions":
                build = answers.text_completion
            payload = build(*args) if fault.body is None else fault.body
            usage = payload.get("usage") if fault.body is None else None
            if isinstance(usage, dict):
                cache = (fault.cache_read_tokens, fault.cache_write_tokens)
                answers.with_cache(usage, anthropic, *cache)
            await http.write_json(writer, fault.status, payload, headers, raw=malformed)
            return True
        asked = {k: v for k, v in body.items() if k != "stream_options"}
        sent = asked if fault.ignore_stream_options else body
        frames = answers.sse_frames(
            anthropic,
            args,
            sent,
            text=route.operation == "completions",
            cache=(fault.cache_read_tokens, fault.cache_write_tokens),
        )
        if fault.nan:
            frames = hostile.nan_frames(frames)
        if not fault.no_done:
            frames.append(_ANTHROPIC_STOP if anthropic else b"data: [DONE]\n\n")
        return await self._stream(
            writer, reader, fault, headers, frames, _BAD_EVENT, _error_event(anthropic, fault)
        )

    async def _bedrock(
        self,
        route: Route,
        body: dict[str, Any],
        fault: MockFault,
        seq: int,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> bool:
        headers = {"x-mock-upstream": self.name, "x-amzn-requestid": f"req_mock_{self.name}_{seq}"}
        headers.update(fault.headers)
        if fault.status >= 400:
            extra, error = bedrock.error(fault.status, fault.error)
            payload = fault.body if fault.body is not None else error
            await http.write_json(writer, fault.status, payload, {**headers, **extra})
            return True
        said = bedrock.last_text(body)
        content = fault.content if fault.content is not None else self._content(body, said)
        prompt = bedrock.prompt_tokens(body)
        if route.operation == "converse":
            await asyncio.sleep(fault.first_token_delay_ms / 1000)
            payload = fault.body or bedrock.converse(
                content, fault.finish_reason, prompt, fault.tool_call
            )
            raw = b"{not json" if fault.malformed_after_chunks is not None else None
            await http.write_json(writer, 200, payload, headers, raw=raw)
            return True
        frames = bedrock.frames(
            content, fault.finish_reason, prompt, fault.tool_call, no_done=fault.no_done
        )
        headers["content-type"] = bedrock.STREAM_CONTENT_TYPE
        bad = eventstream.corrupt(eventstream.event("contentBlockDelta", {"delta": {"text": "x"}}))
        last = bedrock.stream_exception(fault.error)
        return await self._stream(writer, reader, fault, headers, frames, bad, last)

    async def _tools_or_native(
        self,
        route: Route,
        args: answers.Args,
        call: Mapping[str, Any] | None,
        body: Mapping[str, Any],
        fault: MockFault,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> bool:
        """A Responses API answer, or a tool call in the chat / Messages protocol."""
        native, anthropic = route.operation == "responses", route.anthropic
        headers = self._headers(anthropic, fault, args[1])
        if not body.get("stream"):
            await asyncio.sleep(fault.first_token_delay_ms / 1000)
            if fault.body is not None:
                payload = fault.body
            elif native:
                payload = responses.response(args, call)
            else:
                assert call is not None
                payload = answers.tool_call_answer(anthropic, args, call)
            await http.write_json(writer, fault.status, payload, headers)
            return True
        if native:
            frames = responses.frames(args, call, terminal=not fault.no_done)
        else:
            assert call is not None
            frames = answers.tool_call_frames(anthropic, args, call)
            if not fault.no_done:
                frames.append(_ANTHROPIC_STOP if anthropic else b"data: [DONE]\n\n")
        return await self._stream(
            writer, reader, fault, headers, frames, _BAD_EVENT, _error_event(anthropic, fault)
        )

    async def _stream(
        self,
        writer: asyncio.StreamWriter,
        reader: asyncio.StreamReader,
        fault: MockFault,
        headers: dict[str, str],
        frames: list[bytes],
        bad: bytes,
        error: bytes,
    ) -> bool:
        """Write ``frames`` as a chunked body; ``bad`` and ``error`` are the protocol's
        malformed event and error event, for the faults that ask for them."""
        await http.start_chunked(writer, headers)
        await http.pause(writer, fault.first_token_delay_ms, fault.keepalive_ms)
        for index in range(len(frames) + 1):
            if index == fault.cut_after_chunks:
                writer.close()  # no terminating chunk: the client sees a cut body
                return False
            if index == fault.stall_after_chunks:
                if fault.keepalive_ms:
                    while True:
                        await http.pause(writer, 3_600_000, fault.keepalive_ms)
                await http.wait_for_close(reader)
                return False
            if index == fault.error_after_chunks:
                await http.write_chunk(writer, error)
                break
            if index == fault.malformed_after_chunks:
                await http.write_chunk(writer, bad)
            if index == len(frames):
                break
            if index and fault.chunk_delay_ms:
                await http.pause(writer, fault.chunk_delay_ms, fault.keepalive_ms)
            await http.write_chunk(writer, frames[index])
        await http.end_chunked(writer)
        return True

    def _content(self, body: Mapping[str, Any], said: str) -> str:
        canonical = self._canonical(body, said[:200])
        prefix = answers.prefill(body)
        if prefix and canonical.startswith(prefix):
            return canonical[len(prefix) :]  # continue our own text
        return canonical

    def _canonical(self, body: Mapping[str, Any], said: str) -> str:
        if self._default_content is not None:
            return self._default_content
        result = answers.tool_result(body)
        if result is None:
            result = responses.tool_output(body)
        if result is not None:
            return f"Hello from {self.name}! The tool said: {result}"
        return f"Hello from {self.name}! You said: {said}" if said else f"Hello from {self.name}!"

    def _headers(self, anthropic: bool, fault: MockFault, seq: int) -> dict[str, str]:
        headers = {"x-mock-upstream": self.name}
        if anthropic:
            reset = (datetime.now(UTC) + timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
            headers["request-id"] = f"req_mock_{self.name}_{seq}"
            for kind, limit in (("requests", 4000), ("tokens", 400_000)):
                headers[f"anthropic-ratelimit-{kind}-limit"] = str(limit)
                headers[f"anthropic-ratelimit-{kind}-remaining"] = str(limit - 1)
                headers[f"anthropic-ratelimit-{kind}-reset"] = reset
        else:
            headers["x-request-id"] = f"req_mock_{self.name}_{seq}"
            for kind, limit in (("requests", 10_000), ("tokens", 2_000_000)):
                headers[f"x-ratelimit-limit-{kind}"] = str(limit)
                headers[f"x-ratelimit-remaining-{kind}"] = str(limit - 1)
                headers[f"x-ratelimit-reset-{kind}"] = "6ms"
        if fault.retry_after is not None:
            headers["retry-after"] = fault.retry_after
        if fault.retry_after_ms is not None:
            headers["retry-after-ms"] = str(fault.retry_after_ms)
        headers.update(fault.headers)
        return headers

    async def _control(self, request: http.Request, writer: asyncio.StreamWriter) -> None:
        status = 200
        payload: dict[str, Any] = {"ok": True}
        body = request.json()
        try:
            if request.path == "/_mock/faults" and request.method == "POST":
                body = body if isinstance(body, dict) else {}
                self.set_faults(body.get("faults") or [], body.get("persistent"))
            elif request.path == "/_mock/faults" and request.method == "DELETE":
                self.set_faults([], None)
            elif request.path == "/_mock/requests" and request.method == "GET":
                payload = {"requests": self.requests()}
            elif request.path == "/_mock/requests" and request.method == "DELETE":
                self.clear_requests()
            else:
                status, payload = 404, {"error": "unknown control path"}
        except (TypeError, ValueError) as exc:
            status, payload = 400, {"error": str(exc)}
        await http.write_json(writer, status, payload, {})


def _error_event(anthropic: bool, fault: MockFault) -> bytes:
    """The protocol's in-stream error event (for ``error_after_chunks``)."""
    if anthropic:
        error = anthropic_error(529 if fault.status < 400 else fault.status, fault.error)
        return f"event: error\ndata: {json.dumps(error)}\n\n".encode()
    return f"data: {json.dumps(openai_error(500, fault.error))}\n\n".encode()
