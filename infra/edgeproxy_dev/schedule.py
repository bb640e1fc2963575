"""The scheduled functions under ``make run``: the same Lambda handlers, every minute, in the background.

Each job runs in a thread of its own (its handler owns an event loop, as a
Lambda execution environment does) and is invoked with its event from
``events/`` on the interval, starting at once. A failed run is logged and the
next one comes on schedule, as EventBridge would retry.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgeproxy.entrypoint import Entrypoint
from edgeproxy.jobs.entry import build_health_handler, build_quota_handler
from edgeproxy.settings import Settings

logger = logging.getLogger(__name__)

EVENTS = Path(__file__).resolve().parents[2] / "events"


@dataclass
class _Context:
    """What Powertools reads of a Lambda context."""

    function_name: str
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:local:000000000000:function:edgeproxy-local"
    aws_request_id: str = "local"


JOBS: dict[str, tuple[Callable[..., Entrypoint], str]] = {
    "health": (build_health_handler, "health_job.json"),
    "quota-refresh": (build_quota_handler, "quota_refresh.json"),
}


class Schedule:
    """Runs every job of ``JOBS`` each ``interval_s`` seconds until stopped."""

    def __init__(self, settings: Settings, session: Any, interval_s: float = 60.0) -> None:
        self._settings = settings
        self._session = session
        self._interval = interval_s
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def _loop(self, name: str) -> None:
        build, event_file = JOBS[name]
        handler = build(self._settings, self._session)
        event = json.loads((EVENTS / event_file).read_text())
        try:
            while not self._stop.is_set():
                try:
                    logger.info("job %s: %s", name, handler(event, _Context(f"edgeproxy-{name}")))
                except Exception:  # a failed run must not end the schedule
                    logger.exception("job %s failed; it runs again in %.0f s", name, self._interval)
                self._stop.wait(self._interval)
        finally:
            handler.close()

    def __enter__(self) -> Schedule:
        for name in JOBS:
            thread = threading.Thread(target=self._loop, args=(name,), name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=10)
