"""The artifact ``sam build`` produces, run the way Lambda runs it.

One build per module (about a minute): every event in ``events/`` against the
built proxy and job functions with only the built function and layer on
``sys.path`` (a bare python3.12 that sees no project and no venv), and the
streaming function's own ``run.sh`` (what the Lambda Web Adapter starts)
serving a stream that must arrive chunk by chunk.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from edgeproxy_dev.dynamo_server import DUMMY_CREDENTIALS
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.gateway import store
from tests.fixtures.table import TableView
from tests.handlers import artifact
from tests.handlers.expectations import EXPECTED, handler_config

pytestmark = pytest.mark.slow

EVENTS = artifact.ROOT / "events"
INVOKER = Path(__file__).with_name("invoke_built.py")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return artifact.build(tmp_path_factory.mktemp("sam"))


@pytest.fixture
def lambda_env(
    dynamo_endpoint: str, gateway_table: str, upstream_a: MockUpstream
) -> dict[str, str]:
    """A stored configuration and the environment a deployed function would have."""
    store(
        dynamo_endpoint,
        gateway_table,
        handler_config(upstream_a),
    )
    return {
        "PATH": os.environ.get("PATH", ""),
        "EDGEPROXY_DYNAMODB_ENDPOINT": dynamo_endpoint,
        "EDGEPROXY_TABLE": gateway_table,
        "EDGEPROXY_TABLE_SCHEMA": "pk,sk,expires_at",
        "EDGEPROXY_MOCK_KEY": "sk-mock",
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": DUMMY_CREDENTIALS["aws_access_key_id"],
        "AWS_SECRET_ACCESS_KEY": DUMMY_CREDENTIALS["aws_secret_access_key"],
        "POWERTOOLS_METRICS_NAMESPACE": "edgeproxy-test",
        "POWERTOOLS_SERVICE_NAME": "edgeproxy",
        # Every function has it on Lambda: the settings' Lambda defaults apply (no coalescing).
        "AWS_LAMBDA_FUNCTION_NAME": "edgeproxy-test",
    }


def _invoke(built: Path, function: str, events: list[Path], env: dict[str, str]) -> dict[str, Any]:
    result = subprocess.run(  # noqa: S603 - fixed arguments
        [
            str(artifact.lambda_python()),
            "-I",
            "-S",
            str(INVOKER),
            str(built / function),
            str(built / "SharedLayer" / "python"),
            *map(str, events),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("ANSWERS ")]
    answers: dict[str, Any] = json.loads(line.removeprefix("ANSWERS "))
    return answers


FUNCTIONS = {
    "proxy": "ProxyFunction",
    "health_job": "HealthJobFunction",
    "quota_refresh": "QuotaRefreshFunction",
}


def test_every_event_answers_from_the_built_functions(
    built: Path, lambda_env: dict[str, str]
) -> None:
    by_function: dict[str, list[str]] = {}
    for name, (function, _) in EXPECTED.items():
        by_function.setdefault(function, []).append(name)
    assert sorted(p.name for p in EVENTS.glob("*.json")) == sorted(EXPECTED)
    for function, names in by_function.items():
        out = _invoke(built, FUNCTIONS[function], [EVENTS / n for n in names], lambda_env)
        for name in names:
            EXPECTED[name][1](out["answers"][name])
        # What ran came from the build output and the standard library only.
        outside = [
            m for m in out["modules"] if not m.startswith((str(built), "/usr", "/root/.pyenv"))
        ]
        assert outside == []
        assert not any("edgeproxy_dev" in m or "/tests/" in m for m in out["modules"])


def test_the_template_passes_sam_validate_lint() -> None:
    result = artifact.validate_lint()
    assert result.returncode == 0, result.stdout + result.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def stream_server(built: Path, lambda_env: dict[str, str]) -> Iterator[str]:
    """The built streaming function's run.sh, as the Web Adapter starts it."""
    port = _free_port()
    function = built / "StreamFunction"
    python = artifact.lambda_python()
    env = {
        **lambda_env,
        # run.sh calls `python`: the Lambda runtime's, here python3.12's directory.
        "PATH": f"{python.parent}{os.pathsep}{lambda_env['PATH']}",
        "LAMBDA_TASK_ROOT": str(function),
        "PYTHONPATH": str(built / "SharedLayer" / "python"),
        "PYTHONNOUSERSITE": "1",
        "AWS_LWA_PORT": str(port),
    }
    process = subprocess.Popen(  # noqa: S603 - fixed arguments
        ["/bin/sh", str(function / "run.sh")], cwd=function, env=env
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:  # the adapter's readiness check: GET /health answers 200
            assert process.poll() is None, "run.sh exited"
            assert time.monotonic() < deadline, "the streaming server never became ready"
            try:
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_the_streaming_entry_streams_chunk_by_chunk_and_records_before_it_ends(
    stream_server: str,
    upstream_a: MockUpstream,
    dynamo_endpoint: str,
    gateway_table: str,
    table: TableView,
) -> None:
    delay_ms = 150
    upstream_a.set_faults([{"chunk_delay_ms": delay_ms}])
    arrivals: list[float] = []
    body = {"model": "fast-chat", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with httpx.stream(
        "POST",
        f"{stream_server}/v1/chat/completions",
        json=body,
        headers={"authorization": "Bearer sk-event-client"},
        timeout=30,
    ) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                arrivals.append(time.monotonic())
    chunks = len(arrivals)
    assert chunks >= 3
    # Relayed as they came: the spread between first and last chunk is the upstream's pacing.
    assert arrivals[-1] - arrivals[0] >= 0.5 * (chunks - 2) * delay_ms / 1000
    # The response ended only after the outcome write landed (no polling needed).
    assert table.successes("a") == 1


AUDIT = Path(__file__).with_name("audit_compiles.py")


def _pyc(source: Path) -> Path:
    return source.parent / "__pycache__" / f"{source.stem}.cpython-312.pyc"


def test_the_layer_and_the_stream_function_ship_bytecode_that_python_uses_as_is(
    built: Path, lambda_env: dict[str, str]
) -> None:
    magic = subprocess.run(  # noqa: S603 - fixed arguments
        [
            str(artifact.lambda_python()),
            "-c",
            "import importlib.util as u; print(u.MAGIC_NUMBER.hex())",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    for folder in (built / "SharedLayer" / "python", built / "StreamFunction"):
        sources = sorted(folder.rglob("*.py"))
        assert len(sources) > 50, folder  # the packages, not only our own files
        headers = {s: _pyc(s).read_bytes()[:8] if _pyc(s).exists() else b"" for s in sources}
        missing = [str(s) for s, header in headers.items() if not header]
        assert missing == []
        assert {h[:4].hex() for h in headers.values()} == {magic}  # python3.12's bytecode
        # Flags 0b01: hash-based and never checked against the source (Lambda's zip
        # file times would make a timestamp pyc stale; it cannot write a new one).
        assert {int.from_bytes(h[4:8], "little") for h in headers.values()} == {0b01}
    # What a cold start with -B imports and runs compiles nothing from the layer
    # (the function's own one-line app.py ships as source). Before the layer
    # shipped bytecode this listed 588 modules.
    result = subprocess.run(  # noqa: S603 - fixed arguments
        [
            str(artifact.lambda_python()),
            "-I",
            "-S",
            "-B",
            str(AUDIT),
            str(INVOKER),
            str(built / "ProxyFunction"),
            str(built / "SharedLayer" / "python"),
            str(EVENTS / "chat.json"),
            str(EVENTS / "models.json"),
        ],
        env=lambda_env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (answers,) = [line for line in result.stdout.splitlines() if line.startswith("ANSWERS ")]
    assert json.loads(answers.removeprefix("ANSWERS "))["answers"]["chat.json"]["statusCode"] == 200
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("COMPILED ")]
    compiled = json.loads(line.removeprefix("COMPILED "))
    # (app.py is compiled unless an earlier run without -B left its pyc here.)
    assert [c for c in compiled if c != str(built / "ProxyFunction" / "app.py")] == []
