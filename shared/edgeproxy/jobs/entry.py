"""Lambda handlers of the scheduled jobs (clients built per environment, reused).

Their AWS clients are the project's own (``DynamoClient``, ``aws/secrets.py``'s lean
SSM and Secrets Manager clients) on ``aws.session.DeferredSession``: aioboto3 is imported
only when credentials are not the environment's or botocore alone knows an endpoint,
never at import (it was about half of a job's cold start). The health job imports
neither the upstream HTTP client nor the quota job.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger

from edgeproxy.aws.session import DeferredSession
from edgeproxy.clients import open_credentials, open_store, process_rng
from edgeproxy.entrypoint import Entrypoint
from edgeproxy.errors import QuotaRefreshFailed
from edgeproxy.jobs.health import HealthJob
from edgeproxy.settings import Settings

if TYPE_CHECKING:
    from edgeproxy.jobs.quota import QuotaJob


def build_health_handler(
    settings: Settings | None = None,
    session: Any | None = None,
    *,
    clock: Callable[[], float] = time.time,
) -> Entrypoint:
    """The health job's ``handler``; one event loop and one client per execution environment.

    ``clock`` (epoch seconds) dates the scores; the job draws nothing at random (the
    store's client jitters its retries with the process's generator, ``process_rng``).
    """
    settings = settings or Settings.from_env()
    logger = Logger(service="edgeproxy-health", level=settings.log_level)
    loop = asyncio.new_event_loop()
    stack = contextlib.AsyncExitStack()
    jobs: list[HealthJob] = []

    async def run() -> int:
        if not jobs:
            jobs.append(
                HealthJob(await open_store(settings, stack, session, rng=process_rng()), clock)
            )
        return len(await jobs[0].run())

    def invoke(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"scored": loop.run_until_complete(run())}

    def close() -> None:
        loop.run_until_complete(stack.aclose())
        loop.close()

    return Entrypoint(logger.inject_lambda_context(invoke), close)


def build_quota_handler(
    settings: Settings | None = None,
    session: Any | None = None,
    *,
    clock: Callable[[], float] = time.time,
) -> Entrypoint:
    """The quota refresh's ``handler``; clients built once per execution environment.

    A run with a failed source raises ``QuotaRefreshFailed`` after storing the others.
    """
    # Here, not at the top: the health job shares this module and needs no HTTP client.
    from edgeproxy.jobs.quota import QuotaJob
    from edgeproxy.service.alerts.wiring import alert_topic, sweep_alerts
    from edgeproxy.upstream.client import make_http_client

    settings = settings or Settings.from_env()
    logger = Logger(service="edgeproxy-quota", level=settings.log_level)
    loop = asyncio.new_event_loop()
    stack = contextlib.AsyncExitStack()
    jobs: list[QuotaJob] = []
    sweeps: list[Callable[[], Awaitable[int]]] = []

    async def run() -> dict[str, Any]:
        if not jobs:
            aws = session or DeferredSession()
            rng = process_rng()  # the clients' retry jitter and the store's shard picks
            store = await open_store(settings, stack, aws, rng=rng)
            http = make_http_client()
            stack.push_async_callback(http.aclose)
            credentials = open_credentials(settings, stack, aws, rng)
            jobs.append(QuotaJob(store, http, credentials, clock))
            topic = alert_topic(settings.alert_topic_arn, aws, stack)
            sweeps.append(partial(sweep_alerts, store, credentials, clock, topic))
        results = await jobs[0].run()
        await sweeps[0]()  # undelivered budget alerts, retried with their backoff
        refreshed = sum(r.error is None for r in results)
        failed = sorted(r.source for r in results if r.error)
        if failed:
            # After every source was tried and recorded: the run fails loudly (Lambda's
            # Errors metric, JobFailuresAlarm, the on-failure destination).
            raise QuotaRefreshFailed(refreshed, failed)
        return {"refreshed": refreshed, "failed": failed}

    def invoke(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return loop.run_until_complete(run())

    def close() -> None:
        loop.run_until_complete(stack.aclose())
        loop.close()

    return Entrypoint(logger.inject_lambda_context(invoke), close)
