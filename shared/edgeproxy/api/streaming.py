"""The streaming entry point: the same ASGI app under uvicorn, behind the Lambda Web Adapter.

A Lambda Function URL with ``InvokeMode: RESPONSE_STREAM`` hands each
invocation to the adapter, which forwards it as an HTTP request to uvicorn
in the same execution environment and streams the answer back chunk by chunk
(up to 15 minutes, no 30 s integration limit). Clients are built once per
execution environment, on the first request.

The invocation ends when the response does, and Lambda may freeze the
environment right after, so an outcome write left for after the body (the
response's background task) must land before the response ends:
``HoldEnd`` holds back the final empty body frame until the app returned.
Only a success's binding write lands before ``[DONE]`` (the next turn must
see it); the rest of its writes run beside it and after the last byte.

    # functions/stream/app.py
    app = build_streaming_app()
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from edgeproxy.api.app import create_app
from edgeproxy.runtime import build_gateway
from edgeproxy.service.gateway import Gateway
from edgeproxy.service.telemetry import PowertoolsTelemetry
from edgeproxy.service.tracing.setup import tracer_for
from edgeproxy.service.tracing.span import Tracer
from edgeproxy.settings import Settings


class HoldEnd:
    """ASGI middleware: the response's last frame waits for the app (and its background task)."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        held: list[Message] = []

        async def hold(message: Message) -> None:
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                if message.get("body"):
                    # Send the last bytes now; only the end-of-body marker waits.
                    await send({**message, "more_body": True})
                held.append({"type": "http.response.body", "body": b"", "more_body": False})
                return
            await send(message)

        try:
            await self._app(scope, receive, hold)
        finally:
            for message in held:
                await send(message)


class FlushMetrics:
    """ASGI middleware: each request's metrics are written when it ends (EMF on stdout)."""

    def __init__(self, app: ASGIApp, telemetry: PowertoolsTelemetry) -> None:
        self._app = app
        self._telemetry = telemetry

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self._app(scope, receive, send)
        finally:
            if scope["type"] == "http":
                self._telemetry.flush()


class FlushTraces:
    """ASGI middleware: each request's spans are sent before its response may end.

    Inside ``HoldEnd``: the end-of-body frame waits for the export (in a
    thread, so the loop keeps serving); Lambda may freeze the environment
    once the response is over.
    """

    def __init__(self, app: ASGIApp, tracer: Tracer) -> None:
        self._app = app
        self._tracer = tracer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self._app(scope, receive, send)
        finally:
            if scope["type"] == "http":
                await asyncio.to_thread(self._tracer.flush)


def build_streaming_app(settings: Settings | None = None) -> Any:
    """The ASGI app the streaming function's uvicorn serves."""
    settings = settings or Settings.from_env()
    logging.basicConfig(level=settings.log_level, format="%(levelname)s %(name)s %(message)s")
    telemetry = PowertoolsTelemetry(namespace="edgeproxy", service="edgeproxy")
    tracer = tracer_for(settings)

    async def gateway() -> Gateway:
        return await build_gateway(settings, telemetry, tracer=tracer)

    # HoldEnd outside the app: the end of the body waits for the outcome write
    # and, when tracing is on, the spans' export; the metrics flush after all.
    app: ASGIApp = create_app(gateway)
    if tracer.enabled:
        app = FlushTraces(app, tracer)
    return FlushMetrics(HoldEnd(app), telemetry)
