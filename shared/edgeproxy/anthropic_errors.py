"""Anthropic's error types and the HTTP status each one stands for: the one table.

    invalid_request_error   400        rate_limit_error   429
    authentication_error    401        api_error          500
    permission_error        403        overloaded_error   529
    not_found_error         404
    request_too_large       413

Read one way by the upstream client (an error event inside a 200 stream has
a type but no status), the other way by the Messages surface and the mock
Anthropic upstream (a status needs a type).
"""

from __future__ import annotations

from typing import Final

STATUS_BY_TYPE: Final = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}
TYPE_BY_STATUS: Final = {status: kind for kind, status in STATUS_BY_TYPE.items()}


def status_of(kind: str) -> int:
    """The HTTP status an Anthropic error type means (500 for a type it does not list).

    >>> status_of("overloaded_error"), status_of("something_new")
    (529, 500)
    """
    return STATUS_BY_TYPE.get(kind, 500)


def type_of(status: int) -> str | None:
    """The Anthropic error type for an HTTP status, if the table names one.

    >>> type_of(429), type_of(418)
    ('rate_limit_error', None)
    """
    return TYPE_BY_STATUS.get(status)
