"""How one attempt talks to its upstream: a JSON call, or a stream read up to its commit point.

A stream is *committed* once the client could have seen something (the first
reasoning, content or tool frame). Until then nothing is sent and a failure
may still move to another deployment; the chunks read so far are kept and
replayed when the stream is relayed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.models import GatewayConfig
from edgeproxy.config.policies import Operation
from edgeproxy.config.providers import ProviderKind, uncarried
from edgeproxy.errors import ModelNotFound
from edgeproxy.routing import cache_marks
from edgeproxy.routing.deadlines import AttemptTimeouts
from edgeproxy.routing.eligibility import supports
from edgeproxy.routing.estimates.tokens import with_output_limit
from edgeproxy.routing.faults import Fault, FaultKind
from edgeproxy.routing.features import request_features
from edgeproxy.routing.judge.reasons import not_allowed
from edgeproxy.routing.selection import BlockReason
from edgeproxy.routing.step import PoolFailure
from edgeproxy.service.request import ProxyRequest
from edgeproxy.upstream.call import UpstreamCall, UpstreamResponse
from edgeproxy.upstream.client import UpstreamClient
from edgeproxy.upstream.errors import fault
from edgeproxy.upstream.stream import UpstreamStream


@dataclass(slots=True)
class Answer:
    """A successful attempt: a JSON answer, or a stream committed (or complete)."""

    response: UpstreamResponse | None = None
    stream: UpstreamStream | None = None
    head: list[dict[str, Any]] = field(default_factory=list)
    ended: bool = False  # the stream already ended (complete before any content)
    hide_usage: bool = False  # the final usage chunk was asked for by us, not the client


def with_stream_usage(
    body: Mapping[str, Any], deployment: Deployment, stream: bool
) -> tuple[Mapping[str, Any], bool]:
    """The body to send, asking for a final usage chunk when the client did not.

    Returns the body and whether that chunk is ours (to count tokens, then
    drop, so the client sees exactly the stream it asked for).
    """
    if not stream or "stream_options" in body or not deployment.asks_stream_usage:
        return body, False
    return {**body, "stream_options": {"include_usage": True}}, True


def wire(req: ProxyRequest, deployment: Deployment) -> tuple[Operation, Mapping[str, Any], bool]:
    """The operation, body and ``hide_usage`` of ``req``'s attempt on ``deployment``.

    A Responses request goes as it is to a deployment that lists ``responses``
    and as its chat translation to the others; one that has none is
    INCOMPATIBLE there (routing never picks such a deployment for it).
    """
    operation, body = req.operation, req.body
    if operation is Operation.RESPONSES and operation not in deployment.served_operations:
        chat = req.chat
        if chat is None or chat.body is None:
            # Routing filters these deployments out first (RouteRequest.native): a guard.
            refusal = untranslatable(req) or Fault(FaultKind.INCOMPATIBLE, "untranslatable")
            raise fault(refusal.kind, refusal.message, param=refusal.param)
        operation, body = Operation.CHAT, chat.body
    if operation is Operation.RESPONSES:
        return operation, body, False  # its streams always end with their usage
    sent, hide_usage = with_stream_usage(body, deployment, req.stream)
    return operation, sent, hide_usage


# The providers whose wire protocol takes prompt-cache marks (``routing.cache_marks``).
TAKES_CACHE_MARKS = frozenset({ProviderKind.ANTHROPIC, ProviderKind.BEDROCK})


def upstream_call(
    req: ProxyRequest,
    config: GatewayConfig,
    dep: Deployment,
    output_limit: int | None,
    credential: str | None,
    timeouts: AttemptTimeouts,
) -> tuple[UpstreamCall, bool, tuple[str, ...]]:
    """The upstream call of ``req``'s attempt on ``dep``, its ``hide_usage`` (``wire``) and
    the request log's notes on it, with the output limit a tpm reservation set
    (``output_limit``). A chat body's cache marks are removed for a provider that cannot
    take them (note ``cache_marks.DROPPED``)."""
    operation, body, hide_usage = wire(req, dep)
    notes: tuple[str, ...] = ()
    if (
        operation is Operation.CHAT
        and dep.provider not in TAKES_CACHE_MARKS
        and cache_marks.has_marks(body)
    ):
        body, notes = cache_marks.without_marks(body), (cache_marks.DROPPED,)
    call = UpstreamCall(
        deployment=dep,
        operation=operation,
        body=with_output_limit(body, operation, dep, output_limit),
        stream=req.stream,
        credential=credential,
        response_timeout_s=timeouts.response,
        idle_timeout_s=timeouts.idle,
        limits=config.gateway.upstream_limits,
        egress=config.gateway.egress,
    )
    return call, hide_usage, notes


def untranslatable(req: ProxyRequest) -> Fault | None:
    """Why ``req`` can be served only by deployments speaking its operation natively.

    A Responses request whose chat translation failed (``previous_response_id``,
    ``store``, a built-in tool...): routing filters the other deployments out
    before admission, and this fault is the client's 400 when no native one exists.
    """
    if req.operation is not Operation.RESPONSES:
        return None
    chat = req.chat
    if chat is not None and chat.body is not None:
        return None
    param = chat.param if chat else None
    reason = chat.reason if chat else "it needs a deployment serving the Responses API"
    return Fault(FaultKind.INCOMPATIBLE, f"{param}: {reason}", param=param)


def native_refusal(
    req: ProxyRequest, failure: PoolFailure, pool: Sequence[Deployment] = ()
) -> PoolFailure:
    """``failure`` with a 400 naming what no deployment of ``pool`` accepts, when that blocked it:
    the untranslatable request's native feature, the inputs' modalities, or what no
    adapter of the pool can carry (``n > 1`` on Anthropic deployments, say)."""
    blocked = failure.blocked
    if failure.fault is not None or blocked is None:
        return failure
    if blocked.reason is not BlockReason.INCOMPATIBLE:
        return failure
    refusal = untranslatable(req) or modality_refusal(req, pool) or feature_refusal(req, pool)
    return failure if refusal is None else replace(failure, fault=refusal)


def features_of(req: ProxyRequest) -> frozenset[str]:
    """What ``req`` uses that some adapters cannot carry (``RouteRequest.features``), in the
    body a chat deployment gets: a Responses request's chat translation, if it has one."""
    if req.operation is not Operation.RESPONSES:
        return request_features(req.operation, req.body)
    body = None if req.chat is None else req.chat.body
    return frozenset() if body is None else request_features(Operation.CHAT, body)


def feature_refusal(req: ProxyRequest, pool: Sequence[Deployment]) -> Fault | None:
    """The 400 for a request that no deployment of ``pool`` taking its operation and inputs
    can carry: it names each feature and the provider kinds that cannot carry it."""
    features = features_of(req)
    serving = [d for d in pool if supports(d, req.operation, req.modalities)]
    lacking: dict[ProviderKind, set[str]] = {}
    for dep in serving:
        missing = dep.carriage.lacking(features)
        if not missing:
            return None
        lacking.setdefault(dep.provider, set()).update(missing)
    if not lacking:
        return None
    message, param = uncarried(lacking)
    return Fault(FaultKind.INCOMPATIBLE, message, param=param)


def modality_refusal(req: ProxyRequest, pool: Sequence[Deployment]) -> Fault | None:
    """The 400 for inputs no deployment of ``pool`` serving the operation accepts."""
    serving = [d for d in pool if supports(d, req.operation, frozenset())]
    if not serving or any(req.modalities <= d.modalities for d in serving):
        return None
    missing = sorted(req.modalities - frozenset().union(*(d.modalities for d in serving)))
    needed = ", ".join(missing) or "+".join(sorted(req.modalities))
    # Each kind of input set once: two text-only deployments accept "text", not "text or text".
    accepted = " or ".join(sorted({"+".join(sorted(d.modalities)) for d in serving}))
    return Fault(
        FaultKind.INCOMPATIBLE,
        f"this request has {needed} input, and this model's deployments accept {accepted} only",
        param="messages",
    )


def check_pool(req: ProxyRequest, pool: Sequence[Deployment]) -> None:
    """Raise the 404 for a model with no pool, or with none of its deployments offering
    ``req``'s operation (configuration, not state: no fallback chain changes it)."""
    if not pool:
        raise not_allowed(req.model).error()
    if any(supports(d, req.operation, frozenset()) for d in pool):
        return
    error = ModelNotFound(
        f"The model `{req.model}` does not support the {req.operation.value} operation "
        f"({_path(req)}): "
        "none of its deployments offers it.",
        param="model",
    )
    error.code = "operation_not_supported"
    raise error


OPERATION_PATHS = {
    Operation.CHAT: "/v1/chat/completions",
    Operation.COMPLETIONS: "/v1/completions",
    Operation.EMBEDDINGS: "/v1/embeddings",
    Operation.RESPONSES: "/v1/responses",
}


def _path(req: ProxyRequest) -> str:
    if req.surface == "anthropic.messages":
        return "/v1/messages"
    return OPERATION_PATHS.get(req.operation, req.operation.value)


def usage_only(chunk: Mapping[str, Any]) -> bool:
    """The final usage chunk of an OpenAI stream (no choices, only usage)."""
    return not chunk.get("choices") and chunk.get("usage") is not None


class Caller(Protocol):
    async def __call__(self, call: UpstreamCall, timeouts: AttemptTimeouts) -> Answer: ...


class JsonCaller:
    """One JSON attempt."""

    def __init__(self, upstream: UpstreamClient) -> None:
        self._upstream = upstream

    async def __call__(self, call: UpstreamCall, timeouts: AttemptTimeouts) -> Answer:
        return Answer(response=await self._upstream.send(call))


class StreamCaller:
    """Open a stream and read until it commits, ends, or fails."""

    def __init__(self, upstream: UpstreamClient) -> None:
        self._upstream = upstream

    async def __call__(self, call: UpstreamCall, timeouts: AttemptTimeouts) -> Answer:
        stream = await self._upstream.open_stream(call)
        stream.tracker.trust_end = call.deployment.trust_stream_end
        head: list[dict[str, Any]] = []
        try:
            # The total deadline bounds the pre-commit phase too, not only idle gaps.
            async with asyncio.timeout(timeouts.total):
                async for event in stream:
                    if event.done:
                        return Answer(stream=stream, head=head, ended=True)
                    if event.chunk is None:
                        continue
                    head.append(event.chunk)
                    if stream.tracker.committed:
                        return Answer(stream=stream, head=head)
        except TimeoutError:
            await stream.aclose()
            raise fault(FaultKind.TIMEOUT, "the request's total deadline passed") from None
        except BaseException:
            await stream.aclose()
            raise
        # Ended without [DONE] but complete (every choice finished, nothing shown).
        return Answer(stream=stream, head=head, ended=True)
