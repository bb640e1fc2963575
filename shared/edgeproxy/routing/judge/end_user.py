"""The end user a request names (pure): the header, else the body's own field.

``x-edgeproxy-end-user`` wins when present (a client that cannot change its
bodies sets it); else OpenAI's ``user`` field, or Anthropic's
``metadata.user_id`` on the Messages surface. At most ``MAX_END_USER``
printable characters: anything else is a 400 naming the field it came in.
An end user is scoped to its key's team (``routing.judge.levels``), so two
teams' ``alice`` are two end users.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from edgeproxy.errors import RequestError

END_USER_HEADER = "x-edgeproxy-end-user"
MAX_END_USER = 256


def _checked(value: Any, param: str) -> str | None:
    if value is None:
        return None
    if (
        not isinstance(value, str)
        or not value
        or len(value) > MAX_END_USER
        or not value.isprintable()
    ):
        raise RequestError(
            f"{param}: the end user must be 1-{MAX_END_USER} printable characters",
            param=param,
        )
    return value


def end_user_of(header: str | None, body: Mapping[str, Any], surface: str | None) -> str | None:
    """The end user ``header`` (the ``x-edgeproxy-end-user`` value, None: absent) or the
    request ``body`` names (None: none); a 400 naming the field when it is malformed."""
    if header is not None:
        return _checked(header, END_USER_HEADER)
    if surface is not None and surface.startswith("anthropic"):
        metadata = body.get("metadata")
        if isinstance(metadata, Mapping):
            return _checked(metadata.get("user_id"), "metadata.user_id")
        return None
    return _checked(body.get("user"), "user")
