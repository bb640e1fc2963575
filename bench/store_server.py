"""The embedded DynamoDB in its own process, with a log of every call it answers.

Run as ``python -m bench.store_server TABLE``: prints ``store on URL`` once the
table exists, then serves until stdin closes (so it dies with the harness).

Every DynamoDB call is logged with its operation (from ``X-Amz-Target``), the
``time.monotonic()`` at which it arrived and at which moto finished it.
CLOCK_MONOTONIC is system-wide on Linux, so the harness can place each call
before or after the moment its client saw a response end. The log and one
sample request body per operation, and the read and write capacity units
the calls would cost on DynamoDB (``bench.units``), are served on ``GET /_bench/calls`` (the
DynamoDB protocol only uses ``POST /``, so the path cannot collide).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from bench.units import capacity_units
from edgeproxy_dev.dynamo_server import EmbeddedDynamo, create_table
from edgeproxy_dev.template import default_template_path

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
CONTROL_PATH = "/_bench/calls"
TARGET_PREFIX = "DynamoDB_20120810."


class CallLog:
    """A WSGI wrapper that logs each DynamoDB call around the wrapped app."""

    def __init__(self, app: WSGIApp) -> None:
        self._app = app
        self._lock = threading.Lock()
        self.calls: list[tuple[str, float, float]] = []
        self.samples: dict[str, str] = {}
        self.units = {"read": 0.0, "write": 0.0}  # DynamoDB capacity units the calls would cost

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if environ.get("PATH_INFO") == CONTROL_PATH:
            return self._control(environ, start_response)
        arrived = time.monotonic()
        operation = str(environ.get("HTTP_X_AMZ_TARGET", "?")).removeprefix(TARGET_PREFIX)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length)
        environ["wsgi.input"] = _Body(body)
        if operation not in self.samples:
            # Keep one body per operation so the harness can replay it for the store's RTT.
            self.samples[operation] = body.decode()
        read, write = capacity_units(operation, body)
        answer = list(self._app(environ, start_response))
        with self._lock:
            self.calls.append((operation, arrived, time.monotonic()))
            self.units["read"] += read
            self.units["write"] += write
        return answer

    def _control(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        with self._lock:
            calls, units = list(self.calls), dict(self.units)
            if environ.get("REQUEST_METHOD") == "DELETE":
                self.calls.clear()
                self.units = {"read": 0.0, "write": 0.0}
        body = json.dumps({"calls": calls, "samples": self.samples, "units": units}).encode()
        start_response(
            "200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
        )
        return [body]


class _Body:
    """A re-readable request body (the sample was read before moto saw it)."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._offset = 0

    def read(self, size: int = -1) -> bytes:
        end = len(self._data) if size is None or size < 0 else self._offset + size
        chunk = self._data[self._offset : end]
        self._offset += len(chunk)
        return chunk


def main(argv: list[str]) -> None:
    """Serve the embedded DynamoDB with a call log until stdin closes."""
    table = argv[0]
    dynamo = EmbeddedDynamo()
    endpoint = dynamo.start()
    server: Any = dynamo._server  # the werkzeug server reads .app on every request
    server.app = CallLog(server.app)
    create_table(endpoint, table, default_template_path())
    print(f"store on {endpoint}", flush=True)
    try:
        sys.stdin.read()
    finally:
        dynamo.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
