"""What tracing adds to a Lambda cold start: ``python -m bench.tracing_cost [REPEATS]``.

The proxy handler's cold start (fresh interpreter: import + init + first
event, ``bench/coldstart.py``) three ways, on one bench stack: tracing off;
X-Ray on (Powertools' Tracer, sending its subsegments to a UDP socket here,
as to Lambda's daemon); OTLP on (spans flushed at the invocation's end to
an HTTP sink here). Every run has the Lambda variables X-Ray reads
(``LAMBDA_TASK_ROOT``, a sampled ``_X_AMZN_TRACE_ID``), so only the switch
differs. Wall times swing with the machine's load, so the tracer alone is
also timed in CPU seconds (``time.process_time``, in a fresh interpreter
that already imported the handler: building the tracer the settings ask for,
its SDK's import included), which the load hardly moves. Prints one JSON
object of medians, in seconds.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bench import coldstart
from bench.harness import _wait_ready
from bench.processes import Stack

TRACE_ID = "Root=1-67890abc-0123456789abcdef01234567;Parent=0123456789abcdef;Sampled=1"


class _Sink(BaseHTTPRequestHandler):
    posts = 0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        _Sink.posts += 1
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return None


_TRACER = (
    "import time, edgeproxy.api.handler; "
    "from edgeproxy.service.tracing.setup import tracer_for; "
    "from edgeproxy.settings import Settings; settings = Settings.from_env(); "
    "t = time.process_time(); tracer_for(settings); print(time.process_time() - t)"
)


def tracer_cpu_s(env: dict[str, str], repeats: int) -> float:
    """Median CPU seconds of building the tracer (after the handler's imports), fresh each time."""
    samples = []
    for _ in range(repeats):
        done = subprocess.run(  # noqa: S603 - our own interpreter
            [sys.executable, "-c", _TRACER],
            env={**os.environ, "AWS_LAMBDA_FUNCTION_NAME": "edgeproxy-bench", **env},
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        samples.append(float(done.stdout.strip().splitlines()[-1]))
    return statistics.median(samples)


def main(argv: list[str]) -> int:
    repeats = int(argv[0]) if argv else 5
    daemon = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    daemon.bind(("127.0.0.1", 0))
    sink = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    lambda_vars = {
        "LAMBDA_TASK_ROOT": "/var/task",
        "_X_AMZN_TRACE_ID": TRACE_ID,
        "AWS_XRAY_DAEMON_ADDRESS": f"127.0.0.1:{daemon.getsockname()[1]}",
    }
    variants = {
        "off": {},
        "xray": {"EDGEPROXY_XRAY": "on"},
        "otlp": {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{sink.server_address[1]}"},
    }
    out: dict[str, Any] = {}
    with Stack.start(f"bench-{uuid.uuid4().hex[:8]}") as stack:
        _wait_ready(stack)
        for name, env in variants.items():
            result = coldstart.cold_start(
                stack.store_url, stack.table, repeats, {**lambda_vars, **env}
            )
            out[name] = {
                k: round(result[k], 3)
                for k in ("import_init_s", "first_event_s", "cold_start_s", "warm_event_s")
            }
            cpu = tracer_cpu_s({**lambda_vars, **env}, max(repeats, 9))
            out[name]["tracer_cpu_s"] = round(cpu, 3)
    daemon.settimeout(0.5)
    datagrams = 0
    try:
        while daemon.recv(65536):
            datagrams += 1
    except TimeoutError:
        pass
    out["repeats"] = repeats
    out["xray_datagrams"] = datagrams
    out["otlp_posts"] = _Sink.posts
    sink.shutdown()
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
