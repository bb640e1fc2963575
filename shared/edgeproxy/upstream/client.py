"""The upstream client: one attempt against one deployment, JSON or stream.

Deadlines are enforced on the connection with ``asyncio.timeout``: when one
expires the request task is cancelled, which makes the transport
(``upstream.transport``, aiohttp's pool) close the connection, so the
upstream request itself is aborted (spec: "An expired
deadline aborts the upstream request itself").
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx

from edgeproxy.config.deployment import ProviderKind
from edgeproxy.config.providers import RESERVED_HEADERS
from edgeproxy.errors import UpstreamFault
from edgeproxy.routing.faults import FaultKind
from edgeproxy.upstream.adapter import Adapter, Prepared, wants_usage
from edgeproxy.upstream.anthropic import AnthropicAdapter, count_tokens_request
from edgeproxy.upstream.azure import AzureAdapter
from edgeproxy.upstream.call import UpstreamCall, UpstreamResponse, Usage
from edgeproxy.upstream.errors import (
    BODY,
    HEADERS,
    fault,
    hide_secrets,
    http_fault,
    translate_errors,
)
from edgeproxy.upstream.headers import (
    RateLimitInfo,
    parse_retry_after,
    passthrough,
    request_id,
)
from edgeproxy.upstream.openai import OpenAIAdapter, parse_json_object
from edgeproxy.upstream.stream import UpstreamStream
from edgeproxy.upstream.transport import MAX_CONNECTIONS, MAX_PER_HOST, AiohttpTransport

if TYPE_CHECKING:
    from edgeproxy.upstream.bedrock import BedrockClient  # built on first use (runtime.py)
USER_AGENT = "edgeproxy/0.1"
# A black-holed host is a connection failure, not a slow model: give up on the
# TCP/TLS handshake sooner than on the answer (the OpenAI SDK uses 5 s).
CONNECT_TIMEOUT_S = 10.0

_SECRET_SIZE = 8  # a deployment header value this long may be a secret

_ADAPTERS: dict[ProviderKind, Adapter] = {
    ProviderKind.OPENAI: OpenAIAdapter(),
    ProviderKind.OPENAI_COMPAT: OpenAIAdapter(),
    ProviderKind.ANTHROPIC: AnthropicAdapter(),
    ProviderKind.AZURE: AzureAdapter(),
}


def make_http_client(
    *, max_connections: int = MAX_CONNECTIONS, max_per_host: int = MAX_PER_HOST
) -> httpx.AsyncClient:
    """The shared ``httpx.AsyncClient``; create it once per cold start and inject it.

    HTTP/1.1 only (streams map one to one onto connections, and no extra
    dependency). ``trust_env=False``: a gateway must not pick up
    ``HTTP(S)_PROXY`` or ``.netrc`` credentials from whatever environment it
    runs in, which could send provider keys through a proxy nobody configured.
    No redirects: a provider answering 3xx is a failure, not a place to send
    the key. Timeouts are set per request from the execution policy.
    Connections are aiohttp's (``AiohttpTransport``: half httpx's own CPU per
    call), at most ``max_per_host`` to one upstream host: a slow one cannot take another's.
    """
    transport = AiohttpTransport(max_connections=max_connections, max_per_host=max_per_host)
    return _CookielessClient(
        transport=transport,
        trust_env=False,
        follow_redirects=False,
        timeout=httpx.Timeout(600.0, connect=CONNECT_TIMEOUT_S),
        headers={"user-agent": USER_AGENT},
    )


class _NoCookies(httpx.Cookies):
    """A jar that is always empty: an answer's ``Set-Cookie`` is never even parsed."""

    def extract_cookies(self, response: httpx.Response) -> None:
        return None


_NO_COOKIES = _NoCookies()


class _CookielessClient(httpx.AsyncClient):
    """httpx's client without cookies: one caller's upstream answer must never set a
    cookie for another's request. An empty jar that is never filled, rather than a jar
    whose policy refuses every cookie: httpx parses each answer's headers into the
    standard library's cookie objects before the policy refuses (a twentieth of a warm
    Lambda event's CPU), and merges the jar into every request it builds."""

    @property
    def cookies(self) -> httpx.Cookies:
        return _NO_COOKIES

    @cookies.setter
    def cookies(self, cookies: object) -> None:
        raise AttributeError("the upstream client keeps no cookies")


class UpstreamClient:
    """Sends attempts; every failure is raised as ``UpstreamFault``.

    HTTP providers go through ``http``; bedrock deployments through
    ``bedrock`` (aioboto3's ``bedrock-runtime``), with the same interface.

    >>> client = UpstreamClient(make_http_client())               # doctest: +SKIP
    >>> answer = await client.send(call)                          # doctest: +SKIP
    >>> answer.body["choices"][0]["message"]["content"]           # doctest: +SKIP
    """

    def __init__(
        self,
        http: httpx.AsyncClient,
        *,
        clock: Callable[[], float] = time.time,
        bedrock: BedrockClient | None = None,
    ) -> None:
        self._http = http
        self._clock = clock
        self._bedrock = bedrock

    async def send(self, call: UpstreamCall) -> UpstreamResponse:
        """One JSON attempt; the whole answer must arrive within ``response_timeout_s``."""
        if call.deployment.provider is ProviderKind.BEDROCK:
            return await self._bedrock_client().send(call)
        adapter = _ADAPTERS[call.deployment.provider]
        prepared = adapter.prepare(call)
        started = self._clock()
        response, content = await self._post(call, prepared)
        now = self._clock()
        # The injected clock (not perf_counter) keeps one timeline with the outcome
        # timestamps when a test moves time; max() because a wall clock can step back.
        elapsed = max(0.0, now - started)
        if not response.is_success:
            raise self._error(call, response, content, now)
        payload = hide_secrets(parse_json_object(content, "answer"), _echoed(call))
        body = adapter.response(payload, created=int(now))
        usage = Usage.from_openai(body.get("usage"))
        if usage is None and isinstance(body.get("usage"), dict):
            # Counts that are not counts: the answer cannot be billed or rendered as sent.
            raise fault(
                FaultKind.MALFORMED, "the upstream's answer has usage counts that are not counts"
            )
        return UpstreamResponse(
            status=response.status_code,
            body=body,
            usage=usage or Usage(),
            rate_limits=RateLimitInfo.from_headers(response.headers, now),
            elapsed_s=elapsed,
            request_id=request_id(response.headers),
            headers=passthrough(response.headers, _secrets(call)),
        )

    async def count_tokens(self, call: UpstreamCall) -> dict[str, Any]:
        """An Anthropic deployment's count of a Messages body's input tokens.

        ``call.body`` is the client's Messages body (not a chat body);
        the answer is Anthropic's, e.g. ``{"input_tokens": 12}``.
        """
        response, content = await self._post(call, count_tokens_request(call))
        if not response.is_success:
            raise self._error(call, response, content, self._clock())
        answer: dict[str, Any] = hide_secrets(
            parse_json_object(content, "answer"), (call.credential,)
        )
        return answer

    async def _post(self, call: UpstreamCall, prepared: Prepared) -> tuple[httpx.Response, bytes]:
        """Send and read a whole (capped) answer within ``response_timeout_s``."""
        request = self._request(call, prepared)
        with translate_errors(HEADERS):
            async with asyncio.timeout(call.response_timeout_s):
                response = await self._http.send(request, stream=True)
                try:
                    with translate_errors(BODY):
                        content = await read_capped(response, call.limits.answer_bytes)
                finally:
                    await response.aclose()
        return response, content

    async def open_stream(self, call: UpstreamCall) -> UpstreamStream:
        """Open a stream; returns once the upstream sent 2xx response headers.

        An error answer is read and raised as ``UpstreamFault`` (HTTP); the
        headers must arrive within ``response_timeout_s``.
        """
        if call.deployment.provider is ProviderKind.BEDROCK:
            return await self._bedrock_client().open_stream(call)
        adapter = _ADAPTERS[call.deployment.provider]
        request = self._request(call, adapter.prepare(call))
        with translate_errors(HEADERS):
            async with asyncio.timeout(call.response_timeout_s):
                response = await self._http.send(request, stream=True)
                if not response.is_success or _is_json(response):
                    try:
                        with translate_errors(BODY):
                            content = await read_capped(response, call.limits.answer_bytes)
                    finally:
                        await response.aclose()
                    if response.is_success:
                        raise fault(
                            FaultKind.MALFORMED, "the upstream answered a stream request with JSON"
                        )
                    raise self._error(call, response, content, self._clock())
        now = self._clock()
        return UpstreamStream.over_sse(
            response,
            adapter.translator(int(now), _secrets(call), wants_usage(call.body)),
            idle_timeout_s=call.idle_timeout_s,
            limits=call.limits,
            secrets=_echoed(call),
            rate_limits=RateLimitInfo.from_headers(response.headers, now),
            request_id=request_id(response.headers),
            headers=passthrough(response.headers, _secrets(call)),
        )

    def _bedrock_client(self) -> BedrockClient:
        if self._bedrock is None:
            raise fault(
                FaultKind.GATEWAY, "this process has no AWS session for bedrock deployments"
            )
        return self._bedrock

    def _request(self, call: UpstreamCall, prepared: Prepared) -> httpx.Request:
        headers = {
            name.lower(): value
            for name, value in call.extra_headers.items()
            if name.lower() not in RESERVED_HEADERS
        }
        # The deployment's own headers (reserved names refused at load), then the protocol's.
        headers.update({name.lower(): value for name, value in call.deployment.headers.items()})
        headers.update(prepared.headers)
        if call.stream:
            # Raw bytes must be the wire bytes so that every byte resets the
            # idle timer and nothing waits in a decompressor.
            headers["accept-encoding"] = "identity"
        limit = call.response_timeout_s
        # Streams: the header wait and the idle gaps are enforced by
        # asyncio.timeout; an httpx read timeout would apply to both at once.
        timeout = httpx.Timeout(
            connect=min(limit, CONNECT_TIMEOUT_S),
            read=None if call.stream else limit,
            write=limit,
            pool=limit,
        )
        url = (call.deployment.base_url or "").rstrip("/") + prepared.path
        params = {**call.deployment.query, **prepared.query}
        return self._http.build_request(
            "POST", url, params=params or None, json=prepared.body, headers=headers,
            timeout=timeout, extensions={"egress": call.egress},
        )  # fmt: skip

    def _error(
        self, call: UpstreamCall, response: httpx.Response, content: bytes, now: float
    ) -> UpstreamFault:
        return http_fault(
            response.status_code,
            content,
            retry_after=parse_retry_after(response.headers, now),
            secrets=_secrets(call),
        )


async def read_capped(response: httpx.Response, cap: int) -> bytes:
    """The (decoded) body, or an OVERSIZE fault as soon as it passes ``cap`` bytes.

    Checked against the declared length first and then while reading, so
    neither a huge nor an endless answer is ever held beyond ``cap``.
    """
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > cap:
        raise _oversize(cap)
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > cap:
            raise _oversize(cap)
        chunks.append(chunk)
    return b"".join(chunks)


def _oversize(cap: int) -> UpstreamFault:
    return fault(
        FaultKind.OVERSIZE,
        f"the upstream's answer is larger than {cap} bytes (gateway.upstream_limits.answer_bytes)",
    )


def _is_json(response: httpx.Response) -> bool:
    content_type: str = response.headers.get("content-type", "")
    return content_type.startswith("application/json")


def _echoed(call: UpstreamCall) -> tuple[str | None, ...]:
    """What an answer echoing the request must not hand the client: the key, header values.

    Each value and each of its words (the token of ``Bearer <token>``), of
    ``_SECRET_SIZE`` characters or more: hiding a ``true`` or ``2`` would
    redact ordinary words of the model's answer.
    """
    parts = {
        part
        for value in call.deployment.headers.values()
        for part in (value, *value.split())
        if len(part) >= _SECRET_SIZE
    }
    return (call.credential, *sorted(parts, key=len, reverse=True))


def _secrets(call: UpstreamCall) -> Sequence[str | None]:
    """What must never appear in a message: the key, header values, the upstream URL, its host."""
    base = call.deployment.base_url or ""
    return (*_echoed(call), base, base.rstrip("/"), urlsplit(base).netloc)
