"""The artifact ``sam build`` produces, run the way Lambda runs it: a deploy rehearsal.

One build per module (about a minute): every event in ``events/`` against the
built proxy and job functions with only the built function and layer on
``sys.path`` (a bare python3.12 that sees no project and no venv), and the
streaming function's own ``run.sh`` (what the Lambda Web Adapter starts)
serving a stream that must arrive chunk by chunk. Each function runs with
the environment the transformed template gives it and under its own role,
against moto enforcing IAM with exactly that role's statements
(``rehearsal.py``): no call may be denied, and each role grants exactly the
actions its functions were seen to call.
"""

from __future__ import annotations

import itertools
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

from edgeproxy_dev.mock_upstream import MockUpstream
from edgeproxy_dev.template import default_template_path, load_template
from tests.fixtures.secrets import PROCESS_OUTPUT, remember
from tests.handlers import artifact
from tests.handlers.expectations import EVENT_ADMIN_KEY, EXPECTED
from tests.handlers.rehearsal import Rehearsal, rehearse

pytestmark = pytest.mark.slow

EVENTS = artifact.ROOT / "events"
INVOKER = Path(__file__).with_name("invoke_built.py")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return artifact.build(tmp_path_factory.mktemp("sam"))


@pytest.fixture
def stack(upstream_a: MockUpstream) -> Iterator[Rehearsal]:
    """The deploy rehearsal: the stack's state and roles in IAM-enforcing moto (rehearsal.py)."""
    with rehearse(upstream_a) as rehearsal:
        yield rehearsal


def _invoke(built: Path, stack: Rehearsal, function: str, events: list[Path]) -> dict[str, Any]:
    """Run ``function``'s handler on each event under its role; its answers and modules."""
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
        env=stack.environment(function),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    # A denied call fails the function; the denial is the finding, not its traceback.
    assert stack.denials(function) == [], result.stderr[-2000:]
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("ANSWERS ")]
    # The function's own logs, scanned for secrets after the test (the answers hold a new key).
    PROCESS_OUTPUT.extend(result.stdout.replace(line, "").splitlines(keepends=True))
    PROCESS_OUTPUT.extend(result.stderr.splitlines(keepends=True))
    answers: dict[str, Any] = json.loads(line.removeprefix("ANSWERS "))
    return answers


FUNCTIONS = {
    "proxy": "ProxyFunction",
    "health_job": "HealthJobFunction",
    "quota_refresh": "QuotaRefreshFunction",
}


def check_both_quota_sources(response: dict[str, Any]) -> None:
    # The rehearsal's configuration has two quota sources (one per credential scheme).
    assert response == {"refreshed": 2, "failed": []}


REHEARSAL_CHECKS = {"quota_refresh.json": check_both_quota_sources}


def test_every_event_answers_from_the_built_functions_under_their_roles(
    built: Path, stack: Rehearsal
) -> None:
    remember(EVENT_ADMIN_KEY)
    by_function: dict[str, list[str]] = {}
    for name, (function, _) in EXPECTED.items():
        by_function.setdefault(function, []).append(name)
    assert sorted(p.name for p in EVENTS.glob("*.json")) == sorted(EXPECTED)
    for function, names in by_function.items():
        logical = FUNCTIONS[function]
        out = _invoke(built, stack, logical, [EVENTS / n for n in names])
        for name in names:
            REHEARSAL_CHECKS.get(name, EXPECTED[name][1])(out["answers"][name])
        # What ran came from the build output and the standard library only.
        outside = [
            m for m in out["modules"] if not m.startswith((str(built), "/usr", "/root/.pyenv"))
        ]
        assert outside == []
        assert not any("edgeproxy_dev" in m or "/tests/" in m for m in out["modules"])
    for logical in FUNCTIONS.values():
        # The role grants what the function called, and nothing it never called
        # besides what Lambda itself does with the role (its on-failure destination).
        granted, called = stack.functions[logical].actions(), stack.actions(logical)
        assert called - granted == set(), logical
        assert granted - called == _lambda_service_actions(logical), logical


def _lambda_service_actions(logical: str) -> set[str]:
    """Actions Lambda performs with a function's role, not its code: an SQS on-failure
    destination (EventInvokeConfig) is sent with the function's execution role."""
    template = load_template(default_template_path())
    config = template["Resources"][logical]["Properties"].get("EventInvokeConfig", {})
    on_failure = config.get("DestinationConfig", {}).get("OnFailure", {})
    return {"sqs:SendMessage"} if on_failure.get("Type") == "SQS" else set()


def test_the_template_passes_sam_validate_lint() -> None:
    result = artifact.validate_lint()
    assert result.returncode == 0, result.stdout + result.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def stream_server(built: Path, stack: Rehearsal) -> Iterator[str]:
    """The built streaming function's run.sh, as the Web Adapter starts it, under ProxyRole.

    The environment is the template's (the transformed StreamFunction's, resolved)
    with what the adapter and the runtime add. Two differences: the port is a
    free one (the template's 8080 may be taken here), and the adapter itself
    (AWS_LAMBDA_EXEC_WRAPPER=/opt/bootstrap, a layer) is not run: this starts
    what it starts, and polls what it polls.
    """
    env = stack.environment("StreamFunction")
    assert env.pop("AWS_LAMBDA_EXEC_WRAPPER") == "/opt/bootstrap"
    assert env["AWS_LWA_INVOKE_MODE"] == "response_stream"
    assert env["AWS_LWA_PORT"]
    port = _free_port()
    function = built / "StreamFunction"
    python = artifact.lambda_python()
    env.update(
        {
            # run.sh calls `python`: the Lambda runtime's, here python3.12's directory.
            "PATH": f"{python.parent}{os.pathsep}{env['PATH']}",
            "LAMBDA_TASK_ROOT": str(function),
            # The layer: /opt/python on Lambda (run.sh adds that path too).
            "PYTHONPATH": str(built / "SharedLayer" / "python"),
            "PYTHONNOUSERSITE": "1",
            "AWS_LWA_PORT": str(port),
        }
    )
    process = subprocess.Popen(  # noqa: S603 - fixed arguments
        ["/bin/sh", str(function / "run.sh")], cwd=function, env=env
    )
    base = f"http://127.0.0.1:{port}"
    ready = base + env["AWS_LWA_READINESS_CHECK_PATH"]
    try:
        deadline = time.monotonic() + 30
        while True:  # the adapter's readiness check: the path answers 200
            assert process.poll() is None, "run.sh exited"
            assert time.monotonic() < deadline, "the streaming server never became ready"
            try:
                if httpx.get(ready, timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=10)


DELAY_MS = 150  # the mock upstream's pause between stream chunks
# A machine this loaded can stall a process for a second, which delivers a paced stream's
# chunks together; a buffering entry point delivers them together every time.
STREAM_ATTEMPTS = 3


def _stream_arrivals(base: str) -> list[float]:
    """When each data chunk of one streamed chat arrived (monotonic seconds)."""
    arrivals: list[float] = []
    body = {"model": "fast-chat", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with httpx.stream(
        "POST",
        f"{base}/v1/chat/completions",
        json=body,
        headers={"authorization": "Bearer sk-event-client"},
        timeout=30,
    ) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                arrivals.append(time.monotonic())
    return arrivals


def _paced(arrivals: list[float]) -> bool:
    """Relayed as they came: spread over the upstream's pacing, most chunks apart."""
    gaps = [later - earlier for earlier, later in itertools.pairwise(arrivals)]
    spaced = [gap for gap in gaps if gap >= 0.5 * DELAY_MS / 1000]
    spread = arrivals[-1] - arrivals[0]
    return spread >= 0.5 * (len(arrivals) - 2) * DELAY_MS / 1000 and len(spaced) >= len(gaps) / 2


def test_the_streaming_entry_streams_chunk_by_chunk_and_records_before_it_ends(
    stream_server: str, upstream_a: MockUpstream, stack: Rehearsal
) -> None:
    seen: list[list[float]] = []
    table = stack.table()
    while len(seen) < STREAM_ATTEMPTS:
        upstream_a.set_faults([{"chunk_delay_ms": DELAY_MS}])
        arrivals = _stream_arrivals(stream_server)
        seen.append([round(a - arrivals[0], 3) for a in arrivals])
        assert len(arrivals) >= 3
        # The response ended only after the outcome write landed (no polling needed).
        assert table.successes("a") == len(seen)
        if _paced(arrivals):
            break
    else:
        raise AssertionError(f"the chunks arrived together in every attempt: {seen}")
    # Under ProxyRole: nothing denied, nothing called that the role does not grant.
    assert stack.denials("StreamFunction") == []
    assert stack.actions("StreamFunction") - stack.functions["StreamFunction"].actions() == set()


AUDIT = Path(__file__).with_name("audit_compiles.py")


def _pyc(source: Path) -> Path:
    return source.parent / "__pycache__" / f"{source.stem}.cpython-312.pyc"


def test_the_layer_and_the_stream_function_ship_bytecode_that_python_uses_as_is(
    built: Path, stack: Rehearsal
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
        env=stack.environment("ProxyFunction"),
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
