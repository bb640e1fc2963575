"""The processes under test: store, mock upstreams and the gateway, each in its own process.

Separate processes keep the three from sharing a GIL, and let ``/proc`` say
what each costs. Children read their stdin and stop at its end, so they die
with the harness even if it is killed.

    with Stack.start(table="bench") as stack:
        stack.gateway_url, stack.upstream_urls, stack.store_url
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from bench.workloads import ADMIN_KEY, ADMIN_KEY_REF, gateway_config
from edgeproxy.config.loader import parse_config
from edgeproxy_dev.dynamo_server import DUMMY_CREDENTIALS, create_table
from edgeproxy_dev.runner import MOCK_KEY, local_settings, store_config
from edgeproxy_dev.template import default_template_path

ROOT = Path(__file__).resolve().parents[1]
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
START_TIMEOUT_S = 30.0


def die_with_parent() -> None:
    # PR_SET_PDEATHSIG: the kernel sends SIGTERM when the harness dies, however it dies.
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)


def spawn(
    args: list[str],
    pattern: str,
    env: dict[str, str] | None = None,
    program: str = sys.executable,
    timeout_s: float = START_TIMEOUT_S,
) -> tuple[subprocess.Popen[str], re.Match[str]]:
    """Start ``program args...`` at the repo root; wait for an output line matching ``pattern``.

    ``program`` is our own interpreter unless told otherwise (LiteLLM's CLI).
    """
    proc = subprocess.Popen(  # noqa: S603 - our own interpreter and modules
        [program, *args],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        preexec_fn=die_with_parent,  # only a prctl call: safe before exec
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout_s
    seen: list[str] = []
    for line in proc.stdout:
        seen.append(line)
        found = re.search(pattern, line)
        if found:
            threading.Thread(target=_drain, args=(proc,), daemon=True).start()
            return proc, found
        if time.monotonic() > deadline:
            break
    proc.kill()
    raise RuntimeError(f"{' '.join(args)} did not start:\n{''.join(seen)[-2000:]}")


def _drain(proc: subprocess.Popen[str]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        sys.stderr.write(f"[child {proc.pid}] {line}")


def stop(proc: subprocess.Popen[str]) -> None:
    """Close its stdin, then terminate; kill if it hangs."""
    if proc.poll() is None:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used so far (from /proc/<pid>/stat)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime


def tree(pid: int) -> list[int]:
    """``pid`` and every live descendant (from /proc/<pid>/task/*/children)."""
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
    return out


def tree_cpu_seconds(pids: list[int]) -> float:
    """CPU seconds of ``pids`` and their descendants (processes gone count as 0)."""
    total = 0.0
    for root in pids:
        for pid in tree(root):
            try:
                total += cpu_seconds(pid)
            except OSError:
                continue
    return total


def tree_rss_mib(pids: list[int]) -> float:
    """Summed VmRSS (MiB) of ``pids`` and their descendants."""
    total = 0.0
    for root in pids:
        for pid in tree(root):
            try:
                total += memory_mib(pid).get("VmRSS", 0.0)
            except OSError:
                continue
    return total


def memory_mib(pid: int) -> dict[str, float]:
    """Current (VmRSS) and peak (VmHWM) resident memory in MiB."""
    out: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            out[name] = int(value.split()[0]) / 1024
    return out


def _post(url: str) -> None:
    request = urllib.request.Request(url, data=b"", method="POST")  # noqa: S310 - loopback
    with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310
        answer.read()


def put_admin_key(store_url: str) -> None:
    """The admin key parameter ``lambda_env`` refers to, in the bench store's SSM.

    Put by the runs that use ``lambda_env`` (``coldstart``, ``built``), just before them:
    the store builds its SSM backend on this first call, after the long-lived runs'
    memory was measured.
    """
    import boto3  # the harness only; the functions under test never import it

    ssm = boto3.client("ssm", endpoint_url=store_url, region_name="us-east-1", **DUMMY_CREDENTIALS)
    name = ADMIN_KEY_REF.removeprefix("ssm:")
    ssm.put_parameter(Name=name, Value=ADMIN_KEY, Type="SecureString", Overwrite=True)


@dataclass
class Stack:
    """The running store, mock upstreams and gateway."""

    store_url: str
    upstream_ports: tuple[int, int]
    gateway_url: str
    table: str
    procs: dict[str, subprocess.Popen[str]] = field(default_factory=dict)

    @classmethod
    def start(
        cls,
        table: str,
        stub: bool = False,
        upstream_ports: tuple[int, int] | None = None,
        request_log: bool | None = None,
    ) -> Stack:
        """Start the processes and store the benchmark configuration.

        ``stub``: the store can be armed (``arm_stub``) to answer instantly (``store_server``).
        ``upstream_ports``: use mocks already running there instead of starting them.
        ``request_log``: the configuration's ``gateway.request_log.enabled`` (default: on).
        """
        procs: dict[str, subprocess.Popen[str]] = {}
        try:
            procs["store"], found = spawn(
                ["-m", "bench.store_server", *(["--stub"] if stub else [])],
                r"store on (http://\S+)",
            )
            store_url = found.group(1)
            create_table(store_url, table, default_template_path())
            if upstream_ports is None:
                procs["upstream"], found = spawn(
                    ["-m", "bench.upstream_server", MOCK_KEY], r"upstream on (\d+) (\d+)"
                )
                upstream_ports = (int(found.group(1)), int(found.group(2)))
            ports = upstream_ports
            config = parse_config(gateway_config(ports, request_log), "bench configuration")
            asyncio.run(store_config(local_settings(store_url, table), config))
            procs["gateway"], found = spawn(
                [
                    *("-m", "edgeproxy_dev.runner", "--serve-only"),
                    *("--dynamo-endpoint", store_url, "--table", table, "--port", "0"),
                ],
                r"serving on (http://\S+)",
                env={**os.environ, "EDGEPROXY_CRED_MOCK_KEY": MOCK_KEY},
            )
        except BaseException:
            for proc in procs.values():
                stop(proc)
            raise
        return cls(store_url, ports, found.group(1), table, procs)

    def arm_stub(self) -> None:
        """From now on a stub store answers at once, its state as it is now (warm it first)."""
        _post(self.store_url + "/_bench/stub")

    def pids(self) -> list[int]:
        """The gateway's and the store's process ids (what edgeproxy costs)."""
        return [self.procs["gateway"].pid, self.procs["store"].pid]

    def pid(self, name: str) -> int:
        """The process id of ``store``, ``upstream`` or ``gateway``."""
        return self.procs[name].pid

    def upstream_url(self, index: int = 0) -> str:
        """``http://127.0.0.1:PORT`` of one mock upstream."""
        return f"http://127.0.0.1:{self.upstream_ports[index]}"

    def store_calls(self, clear: bool = False) -> dict[str, Any]:
        """The store's call log: ``calls`` [(operation, arrived, finished)] and ``samples``."""
        request = urllib.request.Request(  # noqa: S310 - our own http:// loopback URL
            self.store_url + "/_bench/calls", method="DELETE" if clear else "GET"
        )
        with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310
            data: dict[str, Any] = json.load(answer)
        return data

    def check_alive(self) -> None:
        """Raise if a child process has exited."""
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                raise RuntimeError(f"the {name} process exited with {proc.returncode}")

    def close(self) -> None:
        """Stop the gateway first (it closes its clients), then the others."""
        for name in ("gateway", "upstream", "store"):
            if name in self.procs:
                stop(self.procs[name])

    def __enter__(self) -> Stack:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
