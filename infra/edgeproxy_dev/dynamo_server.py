"""An embedded DynamoDB-protocol server for tests and local runs: moto, in its own process.

``EmbeddedDynamo`` starts ``python -m edgeproxy_dev.dynamo_process``: moto's
DynamoDB application behind ``dynamo_front``, a one-loop HTTP/1.1 server with
kept-alive connections that runs one request at a time. That makes every
request atomic and the server linearizable, as DynamoDB applies each item
write atomically (moto's own threaded server does not: a probe of 32 tasks x
50 ADDs ended below 1600; a limit of 100 admitted 101). A process of its own,
rather than a thread of the caller, keeps moto's ~7 ms of CPU per call off the
caller's GIL (measured +23 ms of gateway CPU per request in ``make run``).

    >>> with EmbeddedDynamo() as dynamo:
    ...     create_table(dynamo.endpoint_url, "edgeproxy-state", default_template_path())
    ...     session.client("dynamodb", **client_kwargs(dynamo.endpoint_url))

Each server is a process with its own tables. The child reads its stdin and
stops at its end (and the kernel signals it if the parent dies), so it never
outlives whoever started it.
"""

from __future__ import annotations

import ctypes
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import TracebackType

import boto3

from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy_dev.aws import DUMMY_CREDENTIALS, REGION, client_kwargs
from edgeproxy_dev.template import create_table_kwargs, table_schema

START_TIMEOUT_S = 60.0
_READY = re.compile(r"dynamo on (http://\S+)")
_INFRA = Path(__file__).resolve().parents[1]


def _die_with_parent() -> None:
    # PR_SET_PDEATHSIG: the kernel sends SIGTERM when the parent dies, however it dies.
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)


class EmbeddedDynamo:
    """moto's DynamoDB server on 127.0.0.1, linearizable, kept-alive, in a child process.

    ``port=0`` (the default) picks a free port; read ``endpoint_url`` after
    ``start()``. ``pid`` is the child's process id (for CPU accounting).
    """

    # The child's module and the line it prints once it listens (a subclass may serve more).
    MODULE = "edgeproxy_dev.dynamo_process"
    READY = _READY

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        if host != "127.0.0.1":
            raise ValueError("the embedded DynamoDB binds 127.0.0.1 only")
        self._port = port
        self._proc: subprocess.Popen[str] | None = None
        self._drain: threading.Thread | None = None
        self._url: str | None = None

    @property
    def endpoint_url(self) -> str:
        """``http://127.0.0.1:<port>`` of the running server."""
        if self._url is None:
            raise RuntimeError("EmbeddedDynamo is not running; call start() first")
        return self._url

    @property
    def pid(self) -> int:
        """The server process's id."""
        if self._proc is None:
            raise RuntimeError("EmbeddedDynamo is not running; call start() first")
        return self._proc.pid

    def start(self) -> str:
        """Start the server process and wait until it listens; returns the endpoint URL."""
        if self._proc is not None:
            raise RuntimeError("EmbeddedDynamo is already running")
        proc = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-m", self.MODULE, "--port", str(self._port)],
            cwd=_INFRA,  # edgeproxy_dev importable even when not installed
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,  # moto's rare tracebacks go to the caller's stderr
            text=True,
            preexec_fn=_die_with_parent,  # only a prctl call: safe before exec
        )
        assert proc.stdout is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        for line in proc.stdout:
            found = self.READY.search(line)
            if found:
                self._proc, self._url = proc, found.group(1)
                self._drain = threading.Thread(target=proc.stdout.read, daemon=True)
                self._drain.start()
                return self._url
            if time.monotonic() > deadline:
                break
        proc.kill()
        proc.wait()
        proc.stdout.close()
        if proc.stdin is not None:
            proc.stdin.close()
        raise RuntimeError("the embedded DynamoDB did not start")

    def stop(self) -> None:
        """Stop the server process (closing its stdin; terminate if it lingers)."""
        proc, self._proc, self._url = self._proc, None, None
        drain, self._drain = self._drain, None
        if proc is None:
            return
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if drain is not None:
            drain.join(timeout=5)  # the child is gone: its stdout is at its end
        if proc.stdout is not None:
            proc.stdout.close()

    def __enter__(self) -> EmbeddedDynamo:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def create_table(endpoint_url: str, table_name: str, template_path: Path) -> TableSchema:
    """Create ``table_name`` as ``template_path`` defines the state table, with TTL on.

    Returns the table's schema, for building a ``DynamoStore`` on it.
    """
    schema = table_schema(template_path)
    client = boto3.client("dynamodb", **client_kwargs(endpoint_url))
    try:
        client.create_table(**create_table_kwargs(template_path, table_name))
        client.update_time_to_live(
            TableName=table_name,
            TimeToLiveSpecification={"AttributeName": schema.ttl, "Enabled": True},
        )
    finally:
        client.close()
    return schema


__all__ = ["DUMMY_CREDENTIALS", "REGION", "EmbeddedDynamo", "client_kwargs", "create_table"]
