"""``wrk`` as the load generator: a Lua script per request, percentiles as JSON.

wrk (Debian package ``wrk``) is an established closed-loop HTTP benchmark
tool written in C; it costs far less CPU per request than anything written
in Python, which matters on a small machine that also runs what it measures.
The script's ``done`` hook prints one JSON line with the latency percentiles
(microseconds), so nothing is parsed from wrk's human-readable output.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

from bench.workloads import Call

MARKER = "BENCH-JSON "
_DONE = """
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '%s{"requests": %d, "duration_us": %d, "errors": %d, "non_2xx": %d, '
    .. '"p50": %d, "p90": %d, "p99": %d, "mean": %.1f, "max": %d}\\n',
    "MARKER", summary.requests, summary.duration,
    e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.mean, latency.max))
end
""".replace("MARKER", MARKER)


@dataclass(frozen=True, slots=True)
class WrkResult:
    """What one wrk run measured; latencies in milliseconds."""

    requests: int
    seconds: float
    p50: float
    p90: float
    p99: float
    mean: float
    failed: int = 0

    @property
    def rps(self) -> float:
        """Completed requests per second."""
        return self.requests / self.seconds if self.seconds else 0.0


def lua_script(call: Call) -> str:
    """A wrk script that POSTs ``call``'s body with its headers."""
    lines = ['wrk.method = "POST"', f"wrk.body = {_lua_string(call.body)}"]
    lines += [f"wrk.headers[{_lua_string(k)}] = {_lua_string(v)}" for k, v in call.headers.items()]
    return "\n".join(lines) + "\n" + _DONE


def _lua_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def find_wrk(install: bool) -> str | None:
    """The wrk binary; with ``install`` (and root), ``apt-get install -y wrk`` if missing."""
    found = shutil.which("wrk")
    if found or not install or os.geteuid() != 0 or not shutil.which("apt-get"):
        return found
    print("wrk not found: apt-get install -y wrk", flush=True)
    if _apt("install", "-y", "wrk"):
        _apt("update")  # a fresh machine may have no package lists yet
        _apt("install", "-y", "wrk")
    return shutil.which("wrk")


def _apt(*args: str) -> int:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    done = subprocess.run(  # noqa: S603
        ["apt-get", *args],  # noqa: S607 - the system package manager, found on PATH
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
        timeout=300,
    )
    return done.returncode


def version(binary: str) -> str:
    """wrk's version line, e.g. ``wrk debian/4.1.0-3+b2 [epoll]``."""
    out = subprocess.run([binary, "-v"], capture_output=True, text=True, check=False)  # noqa: S603
    return (out.stdout or out.stderr).splitlines()[0].split(" Copyright")[0].strip()


def run(
    binary: str, url: str, call: Call, connections: int, seconds: float, strict: bool = True
) -> WrkResult:
    """One wrk run of ``seconds`` at ``connections`` (one thread).

    Raises if any request failed, unless not ``strict`` (then ``failed`` counts them).
    """
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(lua_script(call))
    try:
        out = subprocess.run(  # noqa: S603 - wrk with our own arguments
            [
                binary,
                "-t1",
                f"-c{connections}",
                f"-d{max(1, round(seconds))}s",
                "--timeout",
                "10s",
                "-s",
                script.name,
                url + call.path,
            ],
            capture_output=True,
            text=True,
            check=False,
            timeout=seconds + 30,
        )
    finally:
        os.unlink(script.name)
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith(MARKER)), None)
    if out.returncode or line is None:
        raise RuntimeError(
            f"wrk failed ({out.returncode}): {out.stdout[-500:]} {out.stderr[-500:]}"
        )
    data = json.loads(line[len(MARKER) :])
    failed = data["errors"] + data["non_2xx"]
    if (strict and failed) or not data["requests"]:
        raise RuntimeError(f"wrk saw failed requests on {url}{call.path}: {data}")
    return WrkResult(
        requests=data["requests"],
        seconds=data["duration_us"] / 1e6,
        p50=data["p50"] / 1000,
        p90=data["p90"] / 1000,
        p99=data["p99"] / 1000,
        mean=data["mean"] / 1000,
        failed=failed,
    )
