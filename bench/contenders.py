"""The other processes of ``make bench-compare``: LiteLLM's proxy, Redis, the floor.

LiteLLM lives in a venv of its own (``make bench-compare`` installs it, pinned,
under ``~/.cache/edgeproxy/litellm-VERSION``), never in the project's. Redis is
Debian's ``redis-server`` (installed with apt-get when missing and root), on a
free loopback port, without persistence. Nothing here reaches beyond loopback:
LiteLLM's cost map is the copy it ships (``LITELLM_LOCAL_MODEL_COST_MAP``) and
its telemetry is off.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

from bench import wrk
from bench.processes import spawn
from bench.workloads import CHAT_MODEL, CLIENT_KEY, UPSTREAM_MODEL
from edgeproxy_dev.runner import MOCK_KEY

LITELLM_VERSION = os.environ.get("LITELLM_VERSION", "1.108.7")
LITELLM_VENV = Path(
    os.environ.get(
        "LITELLM_VENV", Path.home() / ".cache" / "edgeproxy" / f"litellm-{LITELLM_VERSION}"
    )
)
QUIET_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # the bundled cost map, no download
    "LITELLM_TELEMETRY": "False",
    "LITELLM_LOG": "ERROR",
    "LITELLM_MODE": "PRODUCTION",  # no .env loading
    "DISABLE_ADMIN_UI": "True",
    "NO_DOCS": "True",
    "NO_PROXY": "*",
    "HF_HUB_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def free_port() -> int:
    """A free loopback port (bound and released; the small race is fine here)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def litellm_config(upstream_port: int, redis_port: int | None) -> str:
    """The proxy's config.yaml: one model on the mock, the client key as master key."""
    lines = [
        "model_list:",
        f"  - model_name: {CHAT_MODEL}",
        "    litellm_params:",
        f"      model: openai/{UPSTREAM_MODEL}",
        f"      api_base: http://127.0.0.1:{upstream_port}/v1",
        f"      api_key: {MOCK_KEY}",
        "litellm_settings:",
        "  telemetry: false",
        "  drop_params: true",
        "general_settings:",
        f"  master_key: {CLIENT_KEY}",
    ]
    if redis_port is not None:
        lines += [
            "router_settings:",
            "  redis_host: 127.0.0.1",
            f"  redis_port: {redis_port}",
        ]
    return "\n".join(lines) + "\n"


def litellm_binary() -> Path:
    """The ``litellm`` CLI of the cached venv; a clear error when it is not installed."""
    binary = LITELLM_VENV / "bin" / "litellm"
    if not binary.exists():
        raise SystemExit(
            f"LiteLLM is not installed at {LITELLM_VENV}: run `make bench-compare` "
            "(it installs litellm[proxy] there)"
        )
    return binary


def start_litellm(config_path: Path, port: int) -> subprocess.Popen[str]:
    """``litellm --config ... --port ...`` with one worker; returns once it prints its start."""
    env = {**os.environ, **QUIET_ENV}
    env.pop("DATABASE_URL", None)
    proc, _ = spawn(
        [
            *("--config", str(config_path), "--host", "127.0.0.1", "--port", str(port)),
            *("--num_workers", "1"),
        ],
        r"Proxy initialized|Uvicorn running",
        env=env,
        program=str(litellm_binary()),
        timeout_s=120,
    )
    return proc


def find_redis(install: bool) -> str | None:
    """``redis-server``; with ``install`` (and root), ``apt-get install -y redis-server``."""
    found = shutil.which("redis-server")
    if found or not install or os.geteuid() != 0 or not shutil.which("apt-get"):
        return found
    print("redis-server not found: apt-get install -y redis-server", flush=True)
    if wrk._apt("install", "-y", "redis-server"):
        wrk._apt("update")
        wrk._apt("install", "-y", "redis-server")
    return shutil.which("redis-server")


def start_redis(binary: str, port: int) -> subprocess.Popen[bytes]:
    """Redis on 127.0.0.1:``port``, no persistence; returns once it answers PING."""
    proc = subprocess.Popen(  # noqa: S603 - Debian's redis-server with our arguments
        [
            binary,
            *("--bind", "127.0.0.1", "--port", str(port)),
            *("--save", "", "--appendonly", "no", "--daemonize", "no"),
            *("--loglevel", "warning"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                if sock.recv(16).startswith(b"+PONG"):
                    return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("redis-server did not answer PING")


def redis_version(binary: str) -> str:
    """E.g. ``Redis 7.0.15``."""
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False)  # noqa: S603
    words = out.stdout.split()
    version = next((w.removeprefix("v=") for w in words if w.startswith("v=")), "?")
    return f"Redis {version}"


def start_floor(upstream_port: int) -> tuple[subprocess.Popen[str], str]:
    """The floor: Node's ``http`` pass-through (``bench/floor.js``) in front of one mock."""
    script = Path(__file__).resolve().parent / "floor.js"
    proc, found = spawn(
        [str(script), f"http://127.0.0.1:{upstream_port}"],
        r"floor on (http://\S+)",
        program=shutil.which("node") or "node",
    )
    return proc, found.group(1)


def start_starlette(upstream_port: int) -> tuple[subprocess.Popen[str], str]:
    """The bare Starlette + httpx pass-through (``bench.passthrough``) in front of one mock."""
    proc, found = spawn(
        ["-m", "bench.passthrough", f"http://127.0.0.1:{upstream_port}"],
        r"passthrough on (http://\S+)",
    )
    return proc, found.group(1)
