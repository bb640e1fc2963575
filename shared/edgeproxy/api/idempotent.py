"""A request with an ``Idempotency-Key``: executed once across the fleet (``docs/idempotency.md``).

    key checked (400) -> Leases.acquire (the lease, or the first call's answer)
        Replay  -> the stored answer (status, headers it keeps, body; a stream's SSE bytes)
        Owned   -> the pipeline's answer, played into a Tee by a task the gateway
                   holds (a client that leaves cancels nothing), captured; the live
                   client follows the tee
                   stored and the key finished when the answer is a complete success,
                   the key released on any error (a retry then executes again)

Scope: the client key's id (a YAML key's digest, an anonymous caller's IP
bucket when authentication is off). The request hash covers the surface
and the body as canonical JSON (sorted keys, no whitespace), so the same
key sent to another endpoint, or with another body, is a 422.

A replay makes no upstream call, spends nothing and is not admitted again
(the first call was): it is the same request, answered again.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from starlette.requests import Request
from starlette.responses import Response

from edgeproxy.api.identity import Identity
from edgeproxy.api.reply import replayed, reply_of
from edgeproxy.api.tee import Following, Tee, until_started
from edgeproxy.service.idempotency import Leases, Owned, Replay

logger = logging.getLogger(__name__)
REPLAYED = "idempotent-replayed"  # the header a replayed answer carries (Stripe's name)


@dataclass(frozen=True, slots=True)
class Answered:
    """A response the pipeline built, and whether it was whole once sent (a stream: it
    reached its ``Closing``; a JSON answer: always), and ``clean`` too (a stream: no
    finish reason the gateway had to infer, what the response cache stores)."""

    response: Response
    complete: Callable[[], bool] = lambda: True
    clean: Callable[[], bool] = lambda: True


Produce = Callable[[Request], Awaitable[Answered]]


class Releasable(Protocol):
    """What the request holds until its answer is over (``pipeline.Held``)."""

    async def release(self) -> None:
        """Give it back (idempotent)."""
        ...


class Keeper(Protocol):
    """Runs work nothing may cancel (``Gateway.keep``)."""

    def keep(self, work: Coroutine[Any, Any, None]) -> object:
        """Start ``work`` and hold it until it ends."""
        ...


@dataclass(frozen=True, slots=True)
class Keyed:
    """One keyed request: its key, scope and hash, and how long it may wait."""

    key: str
    scope: str
    request_hash: str
    deadline_s: float
    stream: bool


def scope_of(who: Identity) -> str:
    """The scope keys are unique in: the client key (see the module doc)."""
    return who.key.id if who.key is not None else who.caller


def request_hash(surface: str, body: Mapping[str, Any]) -> str:
    """sha256 of the surface and the body's canonical JSON."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"{surface}\0{canonical}".encode()).hexdigest()


async def answered_once(
    request: Request,
    keyed: Keyed,
    leases: Leases,
    keeper: Keeper,
    held: Releasable,
    produce: Produce,
    *,
    headers: Mapping[str, str],
) -> Response:
    """The keyed request's response; owns ``held`` (every path gives it back).

    ``produce(request)``: the pipeline's own answer (admission, routing, the
    response it would send), given a request whose client never leaves.
    ``headers``: this request's own (its request id), over a replayed answer's.
    """
    try:
        got = await leases.acquire(keyed.scope, keyed.key, keyed.request_hash, keyed.deadline_s)
    except BaseException:
        await held.release()
        raise
    if isinstance(got, Replay):
        await held.release()
        return replayed(got.answer, {**headers, REPLAYED: "true"})
    tee = Tee()
    keeper.keep(_first(request, keyed, got, leases, held, produce, tee))
    watch = _ClientWatch(request)
    await watch.until(until_started(tee))
    if tee.error is not None and not tee.started():
        raise tee.error
    return Following(tee, gone=watch.gone)


class _ClientWatch:
    """Waits for work, noting whether the client hung up first (the work is never cancelled)."""

    def __init__(self, request: Request) -> None:
        self._request = request
        self.gone = False

    async def until(self, work: Awaitable[None]) -> None:
        """Return when ``work`` is done or the client left (``gone``), whichever is first."""
        task = asyncio.ensure_future(work)
        watch = asyncio.ensure_future(self._disconnected())
        try:
            await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            watch.cancel()
            task.cancel()  # a wait on the tee, not the work itself
        self.gone = not task.done() or task.cancelled()

    async def _disconnected(self) -> None:
        while (await self._request.receive())["type"] != "http.disconnect":
            pass


async def _first(
    request: Request,
    keyed: Keyed,
    owned: Owned,
    leases: Leases,
    held: Releasable,
    produce: Produce,
    tee: Tee,
) -> None:
    """The first call, to its end whatever its client does; the key finished or released."""
    error: BaseException | None = None
    complete = False
    try:
        answered = await produce(Request(request.scope, tee.receive))
        await answered.response(request.scope, tee.receive, tee.send)
        complete = answered.complete()
    except Exception as exc:  # the live client gets it (the guard renders it); the key is freed
        error = exc
        tee.error = exc
    finally:
        await held.release()
    try:
        reply = reply_of(tee, stream=keyed.stream, complete=complete)
        if reply is not None:
            await leases.finish(owned, reply)
        else:
            await leases.release(owned)
    finally:
        tee.end(error)
