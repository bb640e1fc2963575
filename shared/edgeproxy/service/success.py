"""A success's outcome writes under way: the binding's, which the answer waits for, and the rest.

The binding a success earns (a new conversation's, a renewal, a failover's
move) must be in the store before the client has the answer: the caller's
next turn, sent the instant it arrives, may reach another process, which
shares only the store. The counters, the probed circuit's close, the quota
reading and the key's spend need not. So each is a task of its own, started
when the success is known: the answer waits for the binding write only (one
store round trip, beside the counters'), and the response's background task
for the rest. On Lambda, where the invocation waits for every write, the
whole outcome still costs one round trip.

    success = outcomes.success(ctx, attempt, prompt_tokens=..., ...)
    await success.bound()      # then release the answer
    await success.written()    # after it (the response's background task)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Generator
from typing import Any

from edgeproxy.errors import StoreError
from edgeproxy.service.pool import NOTHING, Standing
from edgeproxy.service.telemetry import Telemetry

logger = logging.getLogger(__name__)


class Pending:
    """Starts a success's writes as tasks and holds them until they end."""

    def __init__(self, telemetry: Telemetry) -> None:
        self._telemetry = telemetry
        self._tasks: set[asyncio.Task[Standing]] = set()

    def start(self, write: Coroutine[Any, Any, Standing], what: str) -> asyncio.Task[Standing]:
        """``write`` as a task no caller's cancellation reaches (a client leaving cancels none)."""
        task = asyncio.ensure_future(self._guarded(write, what))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _guarded(self, write: Coroutine[Any, Any, Standing], what: str) -> Standing:
        """``write``'s standing; a failure is logged and counted, never raised (the
        upstream's answer is the client's whatever the store says)."""
        try:
            return await write
        except StoreError as exc:
            logger.warning("could not record a success's %s: %s", what, type(exc).__name__)
        except Exception:
            logger.exception("could not record a success's %s", what)
        self._telemetry.count("OutcomeWriteFailures", write=what)
        return NOTHING


class Success:
    """A success's outcome writes, under way: the binding's (None: nothing to write), the rest."""

    def __init__(self, binding: asyncio.Task[Standing] | None, rest: asyncio.Task[Standing]):
        self._binding = binding
        self._rest = rest

    async def bound(self) -> None:
        """Return once the binding write landed (at once when there is none).

        Never raises: a failed write was logged and counted, and the answer
        goes out all the same. A caller cancelled here cancels only its wait.
        """
        if self._binding is not None:
            await asyncio.wait({self._binding})

    async def written(self) -> Standing:
        """What every write of this success left standing, once all have landed."""
        tasks = {self._rest} if self._binding is None else {self._rest, self._binding}
        await asyncio.wait(tasks)
        standing = NOTHING
        for task in tasks:
            standing += task.result()
        return standing

    def __await__(self) -> Generator[Any, None, Standing]:
        return self.written().__await__()
