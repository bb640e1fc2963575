"""Build the gateway from settings: clients created once per process, then injected.

Both entry points use this: the Lambda handler (on the first invocation of an
execution environment) and the local runner (uvicorn).
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from edgeproxy.aws.session import DeferredSession
from edgeproxy.clients import open_credentials, open_store, process_rng
from edgeproxy.service.alerts.watcher import KeyBudgetAlerts, LevelBudgetAlerts
from edgeproxy.service.alerts.wiring import alert_notifier, alert_topic
from edgeproxy.service.config_cache import ConfigCache
from edgeproxy.service.gateway import Gateway
from edgeproxy.service.keys import KeyRing
from edgeproxy.service.limits.slots import KeySlots
from edgeproxy.service.metrics import FanOut, metrics_for
from edgeproxy.service.outcomes import Outcomes
from edgeproxy.service.router import Router
from edgeproxy.service.sharing.coalescing import CoalescingStore
from edgeproxy.service.telemetry import NoTelemetry, Telemetry
from edgeproxy.service.token_count import TokenCounter
from edgeproxy.service.tracing.setup import tracer_for
from edgeproxy.service.tracing.span import Tracer
from edgeproxy.service.usage.organizations import TeamOrganizations
from edgeproxy.service.usage.request_log import RequestLog
from edgeproxy.settings import Settings
from edgeproxy.state.dynamodb.dynamo_usage import DynamoUsageLog
from edgeproxy.upstream.call import UpstreamCall, UpstreamResponse
from edgeproxy.upstream.client import UpstreamClient, make_http_client

if TYPE_CHECKING:
    from edgeproxy.upstream.bedrock import BedrockClient
    from edgeproxy.upstream.stream import UpstreamStream

# open_store and open_credentials live in clients.py (a job or a CLI command opens them
# without importing the request path) and are still importable from here.
__all__ = [
    "DeferredBedrock",
    "build_gateway",
    "open_credentials",
    "open_store",
    "process_rng",
    "warn_about_auth",
]

logger = logging.getLogger(__name__)


def warn_about_auth(settings: Settings) -> None:
    """Say loudly when authentication is off, or was asked off where it cannot be."""
    if settings.auth_off:
        logger.warning(
            "AUTHENTICATION IS OFF (EDGEPROXY_AUTH=off): /v1/* requests without a key are "
            "served as anonymous 'free' callers. For local demos only; never expose this process."
        )
    elif settings.auth == "off":
        logger.error(
            "EDGEPROXY_AUTH=off is ignored on Lambda: every request still needs a client key"
        )
    elif settings.auth != "required":
        logger.error(
            "EDGEPROXY_AUTH=%r is not 'required' or 'off'; keys are required", settings.auth
        )


class DeferredBedrock:
    """``BedrockClient`` made on the first Bedrock call: its module (botocore's config and
    event stream) stays unimported by processes that have no Bedrock deployment."""

    def __init__(self, session: Any, region: str | None, clock: Callable[[], float]) -> None:
        self._args = (session, region, clock)
        self._client: BedrockClient | None = None

    def client(self) -> BedrockClient:
        if self._client is None:
            from edgeproxy.upstream.bedrock import BedrockClient

            session, region, clock = self._args
            self._client = BedrockClient(session, default_region=region, clock=clock)
        return self._client

    async def send(self, call: UpstreamCall) -> UpstreamResponse:
        return await self.client().send(call)

    async def open_stream(self, call: UpstreamCall) -> UpstreamStream:
        return await self.client().open_stream(call)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()


async def build_gateway(
    settings: Settings,
    telemetry: Telemetry | None = None,
    *,
    session: Any | None = None,
    clock: Callable[[], float] = time.time,
    rng: random.Random | None = None,
    tracer: Tracer | None = None,
) -> Gateway:
    """Create the clients and wire the service. Call once per process.

    ``session``: an aioboto3 session (default: AWS's default credential chain).
    ``clock`` (epoch seconds) and ``rng`` are the only sources of time and
    chance below this point, so a test can move time instead of sleeping.
    ``rng`` defaults to a new ``process_rng()``, made here (after any SnapStart restore:
    the first invocation builds the gateway) and passed to the store, its client and the
    service.
    ``tracer``: where finished requests go as spans (default: what the
    settings configure, ``service/tracing/setup.py``; none when nothing is).

    >>> gateway = await build_gateway(Settings.from_env())  # doctest: +SKIP
    """
    stack = contextlib.AsyncExitStack()
    session = session or DeferredSession()
    rng = rng or process_rng()  # load spreading, not security
    metrics = metrics_for(settings)  # first: a process asked for metrics it cannot serve stops
    if metrics is not None:
        stack.callback(metrics.shutdown)  # runs last: the final push counts the final flushes
    timed = metrics.store_call if metrics else None
    store = await open_store(settings, stack, session, timed, rng=rng)
    # The request path's reads and counters (single-flight reads; counters flushed
    # per window). Registered after the store: its last flush runs before the client closes.
    requests = CoalescingStore(store, settings.coalesce_ms / 1000.0)
    stack.push_async_callback(requests.aclose)
    # The request log (buffered as the counters are; flushed before its client closes). A
    # long-lived process writes it on a client of its own (its own connections), so a
    # request's store call never queues behind a flush; a Lambda writes it beside the
    # outcome write on the one client.
    telemetry = telemetry or NoTelemetry()
    if metrics is not None:
        telemetry = FanOut(telemetry, metrics)
    window_s = settings.coalesce_ms / 1000.0
    log_store = (
        await open_store(settings, stack, session, timed, rng=rng) if window_s > 0 else store
    )
    usage_log = RequestLog(
        DynamoUsageLog.sharing(log_store),
        clock,
        window_s,
        telemetry=telemetry,
        observe=metrics.observe if metrics else None,
        organizations=TeamOrganizations(store, clock, settings.key_cache_ttl_seconds),
    )
    stack.push_async_callback(usage_log.aclose)
    http = make_http_client()
    stack.push_async_callback(http.aclose)
    credentials = open_credentials(settings, stack, session, rng)
    # Bedrock deployments sign with this session's credentials (the function's role).
    bedrock = cast("BedrockClient", DeferredBedrock(session, settings.region, clock))
    stack.push_async_callback(bedrock.aclose)
    tracer = tracer or tracer_for(settings)
    stack.callback(tracer.shutdown)  # the last spans are sent before the process ends
    outcomes = Outcomes(store, clock, rng, telemetry, counters=requests)
    warn_about_auth(settings)
    keys = KeyRing(
        store,
        clock,
        ttl_seconds=settings.key_cache_ttl_seconds,
        admin_key_ref=settings.admin_key_ref,
        credentials=credentials,
        auth_off=settings.auth_off,
    )
    upstream = UpstreamClient(http, clock=clock, bedrock=bedrock)
    config = ConfigCache(store, settings.config_ttl_seconds, clock)
    # Budget alerts ride the store's spend ADDs; their posts finish before the client closes.
    topic = alert_topic(settings.alert_topic_arn, session, stack)
    notifier = alert_notifier(store, credentials, config.cached, clock, topic)
    alerts, level_alerts = KeyBudgetAlerts(notifier), LevelBudgetAlerts(notifier)
    store.spend_watcher, store.level_watcher = alerts, level_alerts
    stack.push_async_callback(alerts.aclose)  # runs before the topic's client closes
    stack.push_async_callback(level_alerts.aclose)
    return Gateway(
        store,
        upstream,
        config,
        Router(requests, outcomes, credentials, clock, rng),
        outcomes,
        clock=clock,
        rng=rng,
        telemetry=telemetry,
        trust_forwarded_for=settings.trust_forwarded_for,
        max_total_ms=settings.max_total_ms,
        aclose=stack.aclose,
        keys=keys,
        tokens=TokenCounter(upstream, credentials),
        usage_log=usage_log,
        tracer=tracer,
        key_slots=KeySlots(settings.max_key_requests),
        metrics=metrics,
        credentials=credentials,
    )
