"""The one line a command prints for a failure outside its own checks (a table or a gateway
it cannot reach, no AWS credentials), instead of a traceback."""

from __future__ import annotations

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
)


def one_line(exc: BaseException, where: str) -> str | None:
    """What to print for ``exc`` met on ``where`` (``table 'x' at http://...``), or None for
    an error that is a bug (let it be seen)."""
    if isinstance(exc, NoCredentialsError):
        return (
            f"cannot reach {where}: no AWS credentials (for a local table, any will do: "
            "AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local)"
        )
    if isinstance(exc, NoRegionError):
        return f"cannot reach {where}: no AWS region (set AWS_REGION)"
    if isinstance(exc, EndpointConnectionError):
        return f"cannot reach {where}: nothing answers at {exc.kwargs.get('endpoint_url')}"
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code = error.get("Code", "error")
        if code == "ResourceNotFoundException":
            return f"{where}: no such table (check --table / EDGEPROXY_TABLE)"
        return f"{where}: {code}: {error.get('Message', '')}".rstrip(": ")
    if isinstance(exc, BotoCoreError):
        return f"cannot reach {where}: {type(exc).__name__}"
    if isinstance(exc, ConnectionError | TimeoutError):
        return f"cannot reach {where}: {type(exc).__name__}"
    return None
