"""The Lambda side of the app: Mangum over the same ASGI app, with Powertools.

Nothing here touches the network at import time: clients are built on the
first invocation of an execution environment and reused by later ones
(Mangum keeps one event loop per environment). X-Ray (Powertools' Tracer)
and OTLP traces only when configured (``service/tracing/setup.py``): their
SDKs cost cold start, so neither is imported otherwise. Pending spans are
flushed before each invocation returns, since Lambda may freeze the
environment right after. With SnapStart, ``api/snapshot.py``'s hooks run
around the snapshot of this init.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
from mangum import Mangum

from edgeproxy.api import snapshot
from edgeproxy.api.app import create_app
from edgeproxy.entrypoint import Entrypoint
from edgeproxy.runtime import build_gateway
from edgeproxy.service.gateway import Gateway
from edgeproxy.service.telemetry import PowertoolsTelemetry
from edgeproxy.service.tracing.setup import tracer_for
from edgeproxy.settings import Settings


def without_stage(event: dict[str, Any]) -> dict[str, Any]:
    """The event with its stage's base path (``/dev``) taken off the request path.

    API Gateway HTTP APIs deliver ``/<stage>/v1/...`` for every stage but
    ``$default``; the app's routes start at ``/v1``. The stage comes from the
    event itself, so any stage name works without configuration.

    >>> without_stage({"rawPath": "/dev/v1/models", "requestContext": {"stage": "dev",
    ...     "http": {"path": "/dev/v1/models"}}})["rawPath"]
    '/v1/models'
    """
    context = event.get("requestContext")
    if not isinstance(context, dict):
        return event
    stage = context.get("stage")
    if not isinstance(stage, str) or not stage or stage == "$default":
        return event
    prefix = f"/{stage}"

    def strip(path: object) -> object:
        if isinstance(path, str) and (path == prefix or path.startswith(prefix + "/")):
            return path[len(prefix) :] or "/"
        return path

    stripped = {**event, "rawPath": strip(event.get("rawPath"))}
    http = context.get("http")
    if isinstance(http, dict):
        stripped["requestContext"] = {**context, "http": {**http, "path": strip(http.get("path"))}}
    return stripped


def build_handler(settings: Settings | None = None) -> Entrypoint:
    """The Lambda ``handler`` for API Gateway HTTP API (payload 2.0) events.

    >>> handler = build_handler()  # in functions/proxy/app.py, at import time
    """
    # One request at a time, frozen when it returns: no counter may wait for a later flush.
    settings = dataclasses.replace(settings or Settings.from_env(), coalesce_ms=0)
    logger = Logger(service="edgeproxy", level=settings.log_level)
    # The package logs through the standard library; give it Powertools' JSON formatter.
    copy_config_to_registered_loggers(source_logger=logger, include={"edgeproxy"})
    logging.getLogger("edgeproxy").setLevel(settings.log_level)
    telemetry = PowertoolsTelemetry(namespace="edgeproxy", service="edgeproxy")
    tracer = tracer_for(settings)

    async def gateway() -> Gateway:
        return await build_gateway(settings, telemetry, tracer=tracer)

    app = create_app(gateway)
    asgi = Mangum(app, lifespan="off")

    def invoke(event: dict[str, Any], context: Any) -> dict[str, Any]:
        telemetry.count("Invocations")
        try:
            response: dict[str, Any] = asgi(without_stage(event), context)
        finally:
            telemetry.flush()  # the invocation's metrics, before Lambda may freeze it
            tracer.flush()  # and its spans
        return response

    def close() -> None:
        asyncio.get_event_loop().run_until_complete(app.state.gateway.aclose())

    snapshot.register(settings, close)  # SnapStart's hooks, where the runtime offers them
    inject = logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
    return Entrypoint(inject(invoke), close)
