"""How errors reach clients: one guard for every route, one error handler per surface.

Every endpoint runs inside ``guarded``: an ``EdgeproxyError`` is answered by
the route's surface (``error_response`` here for OpenAI's JSON,
``messages_answer.error_response`` for Anthropic's); anything else is logged
and answered as a generic 500, never with its text. A client that hung up
mid-request is an INFO line, not an error: nobody is left to answer.
Starlette's own 404/405 for unknown routes and methods come back in the
shape of the surface the path belongs to (``exception_handlers``: Anthropic's
under ``/v1/messages``, OpenAI's elsewhere).

Every answer names its request (``x-request-id``), errors included. Errors
that a retry cannot fix carry ``x-should-retry: false``, the header the
OpenAI and Anthropic SDKs obey before their own status rules, so they do not
retry a misconfigured model or a rejected request pointlessly, nor repeat
what the gateway already did: a 504 after its own attempts, a spent budget.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from edgeproxy.api.codec import request_id
from edgeproxy.errors import EdgeproxyError, MethodNotAllowed, RequestError, RouteNotFound

logger = logging.getLogger(__name__)

Endpoint = Callable[[Request], Awaitable[Response]]
ErrorHandler = Callable[[EdgeproxyError, Request], Response]


# 4xx a retry may fix: timeout, conflict, throttle. Everything else 4xx needs a changed request.
_RETRYABLE_4XX = frozenset({408, 409, 429})
# 5xx codes whose cause is configuration: retrying the same request meets the same wall
# (an upstream credential the gateway cannot fetch was already skipped over every deployment).
_PERMANENT_CODES = frozenset({"model_unavailable", "credential_unavailable"})


def should_retry(exc: EdgeproxyError) -> bool:
    """Whether retrying the same request could succeed (and is not one the gateway made)."""
    if exc.retries_spent:
        return False
    if exc.retryable is not None:
        return exc.retryable
    if 400 <= exc.status < 500:
        return exc.status in _RETRYABLE_4XX
    return exc.code not in _PERMANENT_CODES


def error_headers(exc: EdgeproxyError) -> dict[str, str]:
    """The headers any surface's error answer carries (Retry-After in whole seconds, rounded
    up; ``x-should-retry: false`` when a retry cannot help)."""
    if exc.status >= 500 and not exc.public:
        logger.error("internal error: %s", type(exc).__name__)
    headers: dict[str, str] = {}
    if not should_retry(exc):
        headers["x-should-retry"] = "false"
    if exc.retry_after is not None:
        headers["retry-after"] = str(max(1, math.ceil(exc.retry_after)))
    return headers


def error_response(exc: EdgeproxyError) -> JSONResponse:
    """The OpenAI client's view of ``exc`` (status, OpenAI body, Retry-After)."""
    return JSONResponse(exc.body(), status_code=exc.status, headers=error_headers(exc))


def openai_error(exc: EdgeproxyError, request: Request) -> Response:
    """The OpenAI surface's error handler."""
    return error_response(exc)


def guarded(endpoint: Endpoint, handler: ErrorHandler = openai_error) -> Endpoint:
    """``endpoint`` with its errors answered by ``handler`` (unexpected ones as a generic 500).

    Starlette's own catch-all re-raises after answering, which would reach
    Mangum as an invocation error; catching here keeps one clean answer.
    """

    @functools.wraps(endpoint)
    async def wrapper(request: Request) -> Response:
        try:
            response = await endpoint(request)
        except HTTPException:
            raise
        except EdgeproxyError as exc:
            response = handler(exc, request)
        except ClientDisconnect:
            logger.info("client disconnected while sending %s", request.url.path)
            return Response(status_code=499)  # never delivered; uvicorn needs an answer
        except Exception:
            logger.exception("unhandled error while serving %s", request.url.path)
            response = handler(EdgeproxyError("internal error"), request)
        response.headers.setdefault("x-request-id", request_id(request))
        return response

    return wrapper


def exception_handlers(
    surfaces: Mapping[str, ErrorHandler] | None = None,
) -> Mapping[Any, Callable[[Request, Exception], Any]]:
    """Starlette's handlers: its routing errors (404, 405) in the path's surface's error shape.

    ``surfaces`` maps a path (and everything under it) to its surface's error
    handler; other paths answer in OpenAI's shape.
    """
    by_path = dict(surfaces or {})

    async def routing_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        error: EdgeproxyError
        if exc.status_code == 404:
            error = RouteNotFound(
                f"Unknown request URL: {request.method} {request.url.path[:200]}."
            )
        elif exc.status_code == 405:
            error = MethodNotAllowed(f"Method {request.method} is not allowed on this path.")
        else:
            error = RequestError(str(exc.detail))
            error.status = exc.status_code
        path = request.url.path
        handler = next(
            (h for p, h in by_path.items() if path == p or path.startswith(p.rstrip("/") + "/")),
            openai_error,
        )
        response = handler(error, request)
        response.headers.update(exc.headers or {})  # 405 names the allowed methods
        response.headers.setdefault("x-request-id", request_id(request))
        return response

    return {HTTPException: routing_error}
