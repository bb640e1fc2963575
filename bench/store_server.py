"""The benchmark's store in its own process: the embedded DynamoDB or an instant stub, with a call log.

Run as ``python -m bench.store_server [--stub]``: prints ``store on URL`` once
it listens (the harness then creates the table), and serves until stdin closes
(so it dies with the harness). It is the same front end and moto backend as
``make run`` (``edgeproxy_dev.dynamo_process``): one event loop, kept-alive
connections, one request at a time.

Every DynamoDB call is logged with its operation (from ``X-Amz-Target``), the
``time.monotonic()`` at which it arrived and at which it was answered.
CLOCK_MONOTONIC is system-wide on Linux, so the harness can place each call
before or after the moment its client saw a response end. The log, one sample
request body per operation and the estimated read/write units (see ``units``)
are served on ``GET /_bench/calls`` (the DynamoDB protocol only uses
``POST /``, so the path cannot collide); ``DELETE`` also clears them.

SSM calls (``X-Amz-Target: AmazonSSM.*``) go to moto's SSM, unlogged and
never stubbed: the deployed proxy's admin key is an ``ssm:`` reference, read
once by each fresh process's first request (``bench/coldstart.lambda_env``).

``--stub``: once ``POST /_bench/stub`` arms it (after the harness stored the
configuration), the store answers at once, without moto: a write gets ``{}``
(success, nothing applied), a read the answer moto gave to the same request
body (asked once, then replayed). The state then stays as it was when armed;
what is left is the client's own cost, the gateway's part of every call.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

from moto.moto_server.werkzeug_app import create_backend_app

from edgeproxy_dev.dynamo_process import backend_app, run

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
CONTROL_PATH = "/_bench/calls"
STUB_PATH = "/_bench/stub"
TARGET_PREFIX = "DynamoDB_20120810."
SSM_PREFIX = "AmazonSSM."
WRITES = {"UpdateItem", "PutItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}
_JSON = [("Content-Type", "application/x-amz-json-1.0")]


def units(operation: str, request: bytes, response: bytes) -> tuple[float, float]:
    """Estimated (read, write) capacity units of one call, as DynamoDB would charge them.

    Reads: per item returned, ceil(size / 4 KiB), halved unless strongly
    consistent (``ConsistentRead``). Writes: ceil(size / 1 KiB) per item of the
    request, twice in a transaction. Sizes are the JSON lengths: a slight
    overestimate of DynamoDB's attribute sizes, and never below one unit.
    """
    try:
        body = json.loads(request or b"{}")
    except ValueError:
        return 0.0, 0.0
    if operation in ("BatchGetItem", "GetItem", "Query"):
        try:
            answer = json.loads(response or b"{}")
        except ValueError:
            return 0.0, 0.0
        if operation == "BatchGetItem":
            found = [i for items in answer.get("Responses", {}).values() for i in items]
            asked = body.get("RequestItems", {}).values()
            strong = any(r.get("ConsistentRead") for r in asked)
        else:
            found = [answer["Item"]] if "Item" in answer else answer.get("Items", [])
            strong = bool(body.get("ConsistentRead"))
        read = sum(math.ceil(len(json.dumps(i)) / 4096) for i in found) or 1
        return float(read if strong else read / 2), 0.0
    if operation in ("UpdateItem", "PutItem", "DeleteItem"):
        return 0.0, float(max(1, math.ceil(len(request) / 1024)))
    if operation == "TransactWriteItems":
        items = body.get("TransactItems", [])
        return 0.0, float(2 * sum(max(1, math.ceil(len(json.dumps(i)) / 1024)) for i in items))
    return 0.0, 0.0


class CallLog:
    """A WSGI wrapper that logs each DynamoDB call around the wrapped app (or the stub)."""

    def __init__(
        self, app: WSGIApp, stub: bool = False, ssm: Callable[[], WSGIApp] | None = None
    ) -> None:
        self._app = app
        self._ssm_factory = ssm
        self._ssm: WSGIApp | None = None  # moto's SSM: built on the first SSM call
        self._stub = stub
        self.armed = False
        self._replies: dict[bytes, tuple[str, bytes]] = {}
        self.calls: list[tuple[str, float, float]] = []
        self.units = [0.0, 0.0]
        self.samples: dict[str, str] = {}

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        path = environ.get("PATH_INFO")
        if path == CONTROL_PATH:
            return self._control(environ, start_response)
        if path == STUB_PATH:
            self.armed = self._stub
            return self._json(start_response, {"armed": self.armed})
        target = str(environ.get("HTTP_X_AMZ_TARGET", "?"))
        if self._ssm_factory is not None and target.startswith(SSM_PREFIX):
            # Not the store: neither logged nor stubbed. Built when first asked (about 70 MiB
            # of moto's SSM data), so runs that never read a parameter do not carry it.
            if self._ssm is None:
                self._ssm = self._ssm_factory()
            return self._ssm(environ, start_response)
        arrived = time.monotonic()
        operation = target.removeprefix(TARGET_PREFIX)
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        # Keep one body per operation so the harness can replay it for the store's RTT.
        self.samples.setdefault(operation, body.decode())
        if self.armed and operation in WRITES:
            status, answer = "200 OK", b"{}"
            start_response(status, _JSON)
        elif self.armed and body in self._replies:
            status, answer = self._replies[body]
            start_response(status, _JSON)
        else:
            environ["wsgi.input"] = _Body(body)
            seen: list[str] = []

            def capture(status: str, headers: list[tuple[str, str]], *exc: Any) -> Any:
                seen.append(status)
                return start_response(status, headers, *exc)

            answer = b"".join(self._app(environ, capture))
            if self.armed and operation not in WRITES:
                self._replies[body] = (seen[-1], answer)
        read, write = units(operation, body, answer)
        self.units[0] += read
        self.units[1] += write
        self.calls.append((operation, arrived, time.monotonic()))
        return [answer]

    def _control(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        read, write = self.units
        data = {
            "calls": list(self.calls),
            "samples": self.samples,
            "units": {"read": read, "write": write},
        }
        if environ.get("REQUEST_METHOD") == "DELETE":
            self.calls.clear()
            self.units = [0.0, 0.0]
        return self._json(start_response, data)

    @staticmethod
    def _json(start_response: Callable[..., Any], data: Any) -> list[bytes]:
        body = json.dumps(data).encode()
        start_response("200 OK", [("Content-Type", "application/json")])
        return [body]


class _Body:
    """A re-readable request body (the log read it before moto sees it)."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._offset = 0

    def read(self, size: int | None = -1) -> bytes:
        end = len(self._data) if size is None or size < 0 else self._offset + size
        chunk = self._data[self._offset : end]
        self._offset += len(chunk)
        return chunk


def main(argv: list[str]) -> None:
    """Serve the logged store (``--stub``: the instant stub once armed) until stdin closes."""
    app = CallLog(backend_app(), stub="--stub" in argv, ssm=lambda: create_backend_app("ssm"))
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run(app, 0, banner="store on "))
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
