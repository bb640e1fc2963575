"""Amazon Bedrock upstreams: Converse and ConverseStream through aioboto3's ``bedrock-runtime``.

Requests are signed with the process's AWS credentials (a Lambda function's
IAM role, by the default credential chain). One client per region and
endpoint, opened on first use and closed with the process; botocore's own
retries are off, because the router's failover, cooldowns and deadlines
decide what happens after a failure. Deadlines are ``asyncio.timeout``s,
as for httpx: cancelling the call closes its connection.

SigV4 is computed only for an AWS Bedrock runtime endpoint or one the owner
lists (``config.bedrock_endpoints``): the rule is checked when the
configuration comes in and, as a last guard, by a ``before-sign`` handler on
every client, against the URL botocore is about to sign (a connect failure;
nothing is signed or sent).

    >>> bedrock = BedrockClient(aioboto3.Session(), default_region="us-east-1")  # doctest: +SKIP
    >>> UpstreamClient(http, bedrock=bedrock)                                    # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

from botocore.config import Config

from edgeproxy.config.bedrock_endpoints import signable
from edgeproxy.routing.faults import FaultKind
from edgeproxy.upstream.bedrock_convert import to_chat_completion, to_converse
from edgeproxy.upstream.bedrock_errors import translate_bedrock_errors
from edgeproxy.upstream.bedrock_stream import BedrockChunks, BedrockSource
from edgeproxy.upstream.call import UpstreamCall, UpstreamResponse, Usage
from edgeproxy.upstream.errors import HEADERS, fault, translate_errors
from edgeproxy.upstream.openai import parse_json_object
from edgeproxy.upstream.stream import UpstreamStream

CONNECT_TIMEOUT_S = 10.0  # as for httpx: a black-holed endpoint fails sooner than a slow model
# Our asyncio deadlines end calls; botocore's socket timeout only backs them up.
_READ_TIMEOUT_S = 3600.0
UNSIGNABLE = "the upstream is not a Bedrock endpoint: the request is not signed"
# The owner's listed endpoints for the call being signed (its ``gateway.egress``).
_LISTED: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar(
    "edgeproxy_bedrock_endpoints", default=()
)


def refuse_unsignable(request: Any, **_: Any) -> None:
    """botocore's ``before-sign`` hook: no signature for a host outside the rule."""
    if not signable(request.url, _LISTED.get()):
        raise fault(FaultKind.CONNECT, UNSIGNABLE)


@contextlib.contextmanager
def _listed(call: UpstreamCall) -> Iterator[None]:
    token = _LISTED.set(tuple(call.egress.bedrock_endpoints))
    try:
        yield
    finally:
        _LISTED.reset(token)


def bedrock_client_config() -> Config:
    """One attempt per call (the router retries elsewhere), fixed connect timeout."""
    return Config(
        connect_timeout=CONNECT_TIMEOUT_S,
        read_timeout=_READ_TIMEOUT_S,
        retries={"mode": "standard", "total_max_attempts": 1},
        tcp_keepalive=True,
        user_agent_extra="edgeproxy/0.1",
    )


class BedrockClient:
    """Sends one attempt to a bedrock deployment; every failure is an ``UpstreamFault``."""

    def __init__(
        self,
        session: Any,
        *,
        default_region: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._session = session  # an aioboto3.Session
        self._region = default_region
        self._clock = clock
        self._stack = contextlib.AsyncExitStack()
        self._clients: dict[tuple[str | None, str | None], Any] = {}
        self._lock = asyncio.Lock()

    async def send(self, call: UpstreamCall) -> UpstreamResponse:
        """One ``converse`` call; the answer must arrive within ``response_timeout_s``."""
        params = to_converse(call)
        secrets = _secrets(call)
        started = self._clock()
        with translate_bedrock_errors(HEADERS, secrets):
            # Opening the client (once per process) is local setup, not the upstream's time.
            client = await self._client(call)
        with translate_errors(HEADERS), _listed(call):
            async with asyncio.timeout(call.response_timeout_s):
                with translate_bedrock_errors(HEADERS, secrets):
                    answer = await client.converse(**params)
        now = self._clock()
        request_id = _request_id(answer)
        body = to_chat_completion(
            answer, call.deployment.upstream_model, f"chatcmpl-{request_id or 'bedrock'}", int(now)
        )
        # Through the strict parser, as any answer: it must re-encode for the client.
        body = parse_json_object(json.dumps(body), "answer")
        return UpstreamResponse(
            status=200,
            body=body,
            usage=Usage.from_openai(body.get("usage")) or Usage(),
            rate_limits=None,
            elapsed_s=max(0.0, now - started),
            request_id=request_id,
        )

    async def open_stream(self, call: UpstreamCall) -> UpstreamStream:
        """Open a ``converse_stream``; returns once Bedrock accepted it (HTTP 200)."""
        params = to_converse(call)
        secrets = _secrets(call)
        with translate_bedrock_errors(HEADERS, secrets):
            # Opening the client (once per process) is local setup, not the upstream's time.
            client = await self._client(call)
        with translate_errors(HEADERS), _listed(call):
            async with asyncio.timeout(call.response_timeout_s):
                with translate_bedrock_errors(HEADERS, secrets):
                    answer = await client.converse_stream(**params)
        request_id = _request_id(answer)
        options = call.body.get("stream_options")
        chunks = BedrockChunks(
            f"chatcmpl-{request_id or 'bedrock'}",
            call.deployment.upstream_model,
            int(self._clock()),
            include_usage=isinstance(options, dict) and bool(options.get("include_usage")),
        )
        return UpstreamStream(
            BedrockSource(answer["stream"], chunks, call.limits, secrets),
            idle_timeout_s=call.idle_timeout_s,
            rate_limits=None,
            request_id=request_id,
        )

    async def aclose(self) -> None:
        """Close every client opened."""
        await self._stack.aclose()
        self._clients.clear()

    async def _client(self, call: UpstreamCall) -> Any:
        dep = call.deployment
        key = (dep.region or self._region, dep.base_url)
        client = self._clients.get(key)
        if client is not None:
            return client
        async with self._lock:
            if key not in self._clients:
                kwargs: dict[str, Any] = {"config": bedrock_client_config()}
                if key[0]:
                    kwargs["region_name"] = key[0]
                if key[1]:
                    kwargs["endpoint_url"] = key[1]
                opened = self._session.client("bedrock-runtime", **kwargs)
                entered = await self._stack.enter_async_context(opened)
                entered.meta.events.register("before-sign.bedrock-runtime", refuse_unsignable)
                self._clients[key] = entered
        return self._clients[key]


def _request_id(answer: Any) -> str | None:
    metadata = answer.get("ResponseMetadata") if isinstance(answer, dict) else None
    value = (metadata or {}).get("RequestId")
    return str(value) if value else None


def _secrets(call: UpstreamCall) -> tuple[str | None, ...]:
    base = call.deployment.base_url
    return (base, base.rstrip("/")) if base else ()
