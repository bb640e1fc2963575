"""The one request pipeline at the edge, whatever the surface.

    identify -> read body -> codec.parse -> key's models -> ProxyRequest
             -> gateway.admit (the key's verdict: its fleet slot and rpm count, held here)
             -> gateway (its tpm and budget reservations, routing)
             -> codec.answer / codec.stream

The configuration is read once here and handed to the service, so the key
check, the body limit and routing see the same version; the client key is
hashed once (``identify``) and only the caller id travels on. Errors are
answered by the surface's handler (``errors.guarded`` with ``codec.error``).

A client that hangs up cancels its request: the gateway call (routing, a
JSON upstream call, the header hold of a stream) runs against a watch on
the connection and is cancelled when the client leaves, which cancels the
upstream request and releases its in-flight count. Not so for a request
with an ``Idempotency-Key`` (``api.idempotent``): it runs on a request whose
client never leaves, to its end, so its answer is stored for the retry. A relayed stream is
closed after the response ends, however it ended, so its upstream and its
count are released even if the body was never iterated.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, TypeVar

from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.types import Message, Receive, Scope, Send

from edgeproxy.api.codec import Codec, Parsed, request_id
from edgeproxy.api.deprecation import notice
from edgeproxy.api.idempotent import Answered, Keyed, answered_once, request_hash, scope_of
from edgeproxy.api.identity import Identity, check_access, identify
from edgeproxy.api.parsing import read_json_object
from edgeproxy.api.rate_headers import for_surface
from edgeproxy.api.stored.cached import Planned, Produced, cached, plan_of
from edgeproxy.api.stored.capture import Watched
from edgeproxy.config.models import GatewayConfig
from edgeproxy.errors import ClientGone, UpstreamError
from edgeproxy.routing.idempotency import HEADER, checked_key
from edgeproxy.routing.judge.end_user import END_USER_HEADER, end_user_of
from edgeproxy.service.gateway import Gateway
from edgeproxy.service.limits.parallel import KeySlot
from edgeproxy.service.limits.slots import Slot
from edgeproxy.service.request import ProxyRequest
from edgeproxy.service.stream.events import Closing

logger = logging.getLogger(__name__)
_STREAM_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}
CLIENT_CLOSED = 499  # nginx's code for "the client closed the request"; never reaches it
T = TypeVar("T")


class Gone:
    """The client hung up before the answer was ready (``unless_client_leaves``)."""


GONE = Gone()


@dataclass(slots=True)
class Held:
    """What a request holds until its answer is over: its place in its key's share of the
    process (``share``) and, for a key with ``max_parallel_requests``, its fleet slot."""

    share: Slot
    fleet: KeySlot | None = None

    async def release(self) -> None:
        """Give both back (idempotent)."""
        self.share.release()
        fleet, self.fleet = self.fleet, None
        if fleet is not None:
            await fleet.release()


class RelayedResponse(StreamingResponse):
    """A streamed answer that closes the relay once the response is over, however it ended.

    A send after the client left raises ``ClientGone`` and ends the stream at
    once: the server's send then returns without waiting, and starlette's own
    disconnect cancellation alone can lose the race against a relay whose
    every await is already done (a fast upstream into a closed connection),
    which kept the upstream read at full speed for an answer nobody receives.
    """

    def __init__(self, events: Any, content: Any, held: Held, **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self._events = events
        self._held = held  # the key's request slots, held until the stream is over

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        gone = False

        async def watched() -> Message:  # the disconnect, as starlette's listener receives it
            nonlocal gone
            message = await receive()
            gone = gone or message["type"] == "http.disconnect"
            return message

        async def checked(message: Message) -> None:
            if gone:
                raise ClientGone
            await send(message)

        try:
            await super().__call__(scope, watched, checked)
        except ClientGone:
            logger.info("the client left during its stream; the stream is closed")
        finally:
            try:
                aclose = getattr(self._events, "aclose", None)
                if aclose is not None:
                    await aclose()
            finally:
                await self._held.release()


async def _disconnected(request: Request) -> None:
    """Return once the client has gone (its body was read; only a disconnect follows)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def unless_client_leaves(request: Request, work: Awaitable[T]) -> T | Gone:
    """``work``'s result; cancels it and returns ``GONE`` if the client hangs up first.

    Under Mangum the next receive only returns after the response, so on
    Lambda this never fires early.
    """
    task = asyncio.ensure_future(work)
    watch = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        task.cancel()
        raise
    finally:
        watch.cancel()
    if not task.done():
        task.cancel()
        with contextlib.suppress(BaseException):
            await task  # let the cancelled work release what it holds first
        return GONE
    return task.result()


def _asks(request: Request, header: str) -> bool:
    return request.headers.get(header, "").lower() == "true"


async def gateway_of(request: Request) -> Gateway:
    """The process's gateway (built on first use by the app's ``LazyGateway``)."""
    gateway: Gateway = await request.app.state.gateway.get()
    return gateway


async def identified(request: Request) -> tuple[Gateway, GatewayConfig, Identity]:
    """The gateway, this request's one read of the configuration, and the authenticated caller."""
    gateway = await gateway_of(request)
    config = await gateway.config()
    who = await identify(request, config, gateway.keys, gateway.trust_forwarded_for)
    return gateway, config, who


async def serve(request: Request, codec: Codec) -> Response:
    """Serve one proxied request on ``codec``'s surface; errors raise to the route's guard.

    The request holds a slot of its key's share (``service.limits.slots``) from
    before its body is read to the end of its answer, and a capped key's fleet
    slot (``service.limits.parallel``) from its admission to the same end. A
    request with an ``Idempotency-Key`` is answered once (``api.idempotent``),
    which then owns what it holds.
    """
    gateway, config, who = await identified(request)
    held = Held(gateway.key_slots.take(who.slot_holder))
    try:
        key = checked_key(request.headers.get(HEADER))
        prepared = await _prepared(request, codec, config, who)
        plan = plan_of(request, config, who, prepared.req, prepared.body)
    except BaseException:
        await held.release()
        raise
    if key is not None:
        return await _once(request, codec, gateway, config, who, held, prepared, key)
    if plan is not None:
        return await _cached(request, codec, gateway, config, held, prepared, plan)
    try:
        response = (await _answered(request, codec, gateway, config, prepared, held)).response
    except BaseException:
        await held.release()
        raise
    if not isinstance(response, RelayedResponse):
        await held.release()
    return response


@dataclass(frozen=True, slots=True)
class Prepared:
    """A request read, parsed and checked: what routing and the answer need of it."""

    req: ProxyRequest
    parsed: Parsed
    requested: str  # the model as the client named it (an alias: its deprecation notice)
    body: dict[str, Any]  # the body as the client sent it (an idempotency key's hash covers it)


async def _prepared(
    request: Request, codec: Codec, config: GatewayConfig, who: Identity
) -> Prepared:
    limits = config.gateway
    body = await read_json_object(request, limits.max_body_bytes, limits.body_read_timeout_seconds)
    parsed = codec.parse(body)
    model = config.canonical(parsed.model)  # an alias routes as its model, sharing its state
    check_access(who, parsed.model, config.names_of(model))
    pin = request.headers.get("x-route-pin") if who.admin else None
    req = ProxyRequest(
        operation=codec.operation,
        model=model,
        body=parsed.body,
        caller=who.caller,
        request_id=request_id(request),
        stream=parsed.stream,
        pin=pin or None,
        want_routing=request.headers.get("x-unified-routing-metadata", "").lower() == "true",
        want_reasons=who.admin and _asks(request, "x-unified-routing-reasons"),
        modalities=parsed.modalities,
        surface=codec.surface,
        role=who.role,
        key=who.key,
        chat=parsed.chat,
        # The client's own body: a surface's translation may drop the field (Messages'
        # ``metadata``).
        end_user=end_user_of(request.headers.get(END_USER_HEADER), body, codec.surface),
    )
    return Prepared(req, parsed, parsed.model, body)


async def _once(
    request: Request,
    codec: Codec,
    gateway: Gateway,
    config: GatewayConfig,
    who: Identity,
    held: Held,
    prepared: Prepared,
    key: str,
) -> Response:
    """A keyed request: executed once, fleet-wide (``api.idempotent``)."""
    req = prepared.req
    keyed = Keyed(
        key=key,
        scope=scope_of(who),
        request_hash=request_hash(req.protocol, prepared.body),
        deadline_s=gateway.deadline_s(req, config),
        stream=req.stream,
    )

    async def produce(quiet: Request) -> Answered:
        return await _answered(quiet, codec, gateway, config, prepared, held, watch=True)

    return await answered_once(
        request,
        keyed,
        gateway.leases,
        gateway,
        held,
        produce,
        headers=codec.headers(req.request_id),
    )


async def _cached(
    request: Request,
    codec: Codec,
    gateway: Gateway,
    config: GatewayConfig,
    held: Held,
    prepared: Prepared,
    plan: Planned,
) -> Response:
    """A request the response cache is on for (``api.stored.cached``)."""

    async def produce(req: ProxyRequest) -> Produced:
        own = Prepared(req, prepared.parsed, prepared.requested, prepared.body)
        answered = await _answered(request, codec, gateway, config, own, held, watch=True)
        relayed = isinstance(answered.response, RelayedResponse)
        return Produced(answered.response, relayed, answered.clean)

    return await cached(
        codec, gateway, config, prepared.req, prepared.requested, held, plan, produce
    )


def _clean(closing: Closing | None) -> bool:
    """Whether a stream's end makes it a stored answer: complete, every finish reason the
    upstream's, no anomaly, not continued after a cut."""
    return (
        closing is not None
        and not closing.finish_reasons
        and not closing.anomalies
        and not closing.continued
    )


async def _answered(
    request: Request,
    codec: Codec,
    gateway: Gateway,
    config: GatewayConfig,
    prepared: Prepared,
    held: Held,
    *,
    watch: bool = False,
) -> Answered:
    """The response to send; ``watch``: a stream's relay is watched for its end (``complete``
    says whether it reached it), for an answer that may be stored."""
    req, parsed = prepared.req, prepared.parsed
    # The verdict's first writes: a request over the key's cap is refused with nothing counted.
    admission = await gateway.admit(req, config)
    held.fleet = admission.slot
    headers = {**codec.headers(req.request_id), **notice(config, prepared.requested)}
    gone = Response(status_code=CLIENT_CLOSED, headers=headers)  # nobody is listening
    if req.stream:
        answer = await unless_client_leaves(request, gateway.open_stream(req, config, admission))
        if isinstance(answer, Gone):
            return Answered(gone)
        events: Any = Watched(answer.body) if watch else answer.body
        relayed = RelayedResponse(
            events,
            codec.stream(events, parsed, gateway.now()),
            held,
            media_type="text/event-stream",
            headers={
                **headers,
                **for_surface(answer.headers, codec.rate_names, gateway.now()),
                **_STREAM_HEADERS,
            },
            background=BackgroundTask(answer.after) if answer.after else None,
        )
        if isinstance(events, Watched):
            return Answered(
                relayed,
                lambda: events.closing is not None,
                lambda: _clean(events.closing),
            )
        return Answered(relayed)
    result = await unless_client_leaves(request, gateway.complete(req, config, admission))
    if isinstance(result, Gone):
        return Answered(gone)
    passed = for_surface(result.headers, codec.rate_names, gateway.now())
    try:
        return Answered(
            JSONResponse(
                codec.answer(result.body, gateway.now()),
                headers={**headers, **passed},
                background=BackgroundTask(result.after) if result.after else None,
            )
        )
    except Exception as exc:
        # An answer this surface cannot render: the attempt's outcome must still be
        # written (it releases the in-flight count), and the client gets a clean 502.
        if result.after:
            await result.after()
        logger.warning("could not render an upstream answer: %s", type(exc).__name__)
        raise UpstreamError(
            "The upstream's answer could not be translated.", status=502, type="api_error"
        ) from None
