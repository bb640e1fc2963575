"""The object a Lambda function exposes as ``handler``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Invoke = Callable[[dict[str, Any], Any], dict[str, Any]]


class Entrypoint:
    """Call it with (event, context); ``close()`` releases its clients.

    Lambda never calls ``close`` (it freezes the execution environment);
    tests and benchmarks do, so no client outlives its event loop.
    """

    def __init__(self, invoke: Invoke, close: Callable[[], None]) -> None:
        self._invoke = invoke
        self._close = close

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        return self._invoke(event, context)

    def close(self) -> None:
        """Close the clients built by earlier invocations."""
        self._close()
