"""One mapping from the exception tree to the OpenAI error JSON.

Starlette looks handlers up along the exception's MRO, so the handler for
``EdgeproxyError`` serves the whole tree; the catch-all logs the exception and
answers a generic 500 without its text.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from edgeproxy.errors import EdgeproxyError

logger = logging.getLogger(__name__)


def error_response(exc: EdgeproxyError) -> JSONResponse:
    """The client's view of ``exc`` (status, OpenAI body, Retry-After)."""
    headers = {}
    if exc.retry_after is not None:
        headers["retry-after"] = str(max(1, math.ceil(exc.retry_after)))
    if exc.status >= 500 and not exc.public:
        logger.error("internal error: %s", type(exc).__name__)
    return JSONResponse(exc.body(), status_code=exc.status, headers=headers)


async def _edgeproxy(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, EdgeproxyError)
    return error_response(exc)


async def _http(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    kind = "invalid_request_error"
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code)
    body = {"error": {"message": str(exc.detail), "type": kind, "param": None, "code": code}}
    return JSONResponse(body, status_code=exc.status_code)


Endpoint = Callable[[Request], Awaitable[Response]]


def guarded(endpoint: Endpoint) -> Endpoint:
    """Answer any unexpected exception with a generic 500 (logged, text never shown).

    Starlette's own catch-all re-raises after answering, which would reach
    Mangum as an invocation error; catching here keeps one clean answer.
    """

    @functools.wraps(endpoint)
    async def wrapper(request: Request) -> Response:
        try:
            return await endpoint(request)
        except (EdgeproxyError, HTTPException):
            raise
        except Exception:
            logger.exception("unhandled error while serving %s", request.url.path)
            return error_response(EdgeproxyError("internal error"))

    return wrapper


def exception_handlers() -> Mapping[Any, Callable[[Request, Exception], Any]]:
    return {EdgeproxyError: _edgeproxy, HTTPException: _http}
