"""``make run`` sets itself up and serves the example as it stands; ``make test`` checks the
system first (infra/test-deps.sh)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from edgeproxy.config.loader import load_config_file
from edgeproxy_dev.runner import mock_lines, mock_upstreams, moved
from tests.fixtures.local_run import REPO, LocalRun, local_run

EXAMPLE_PORTS = (18101, 18102, 18103)  # where infra/config.example.yaml points its mocks
# The dev extra's tools: none of them belongs in `make run`'s venv.
DEV_TOOLS = {"mypy", "playwright", "cfn-lint", "hypothesis", "matplotlib", "pytest", "ruff"}


@contextlib.contextmanager
def holding(ports: tuple[int, ...]) -> Iterator[None]:
    """Listen on each of ``ports`` (one another program holds already counts as held)."""
    with contextlib.ExitStack() as stack:
        for port in ports:
            sock = stack.enter_context(socket.socket())
            try:
                sock.bind(("127.0.0.1", port))
            except OSError as exc:
                if exc.errno != errno.EADDRINUSE:
                    raise
                continue
            sock.listen(1)
        yield


def _chat(run: LocalRun, model: str) -> httpx.Response:
    return httpx.post(
        f"{run.base_url}/v1/chat/completions",
        headers={"Authorization": f"Bearer {run.value('client key:')}"},
        json={"model": model, "messages": [{"role": "user", "content": "hi"}]},
        timeout=30,
    )


def test_the_example_serves_with_its_mock_ports_taken_by_another_program() -> None:
    with holding(EXAMPLE_PORTS), local_run() as run:
        assert run.lines[0].startswith("edgeproxy is serving on"), run.lines
        # Three ports the configuration names, three mocks, none where it said.
        assert len(run.mock_ports) == 3, run.lines
        assert not run.mock_ports & set(EXAMPLE_PORTS)
        assert _chat(run, "fast-chat").status_code == 200
        assert _chat(run, "demo-failover").status_code == 200  # its always-down mock moved too
        stored = httpx.get(
            f"{run.base_url}/admin/deployments",
            headers={"Authorization": f"Bearer {run.value('admin key:')}"},
            timeout=30,
        )
        assert stored.status_code == 200, stored.text
        urls = {d["id"]: d["base_url"] for d in stored.json()["deployments"]}
        ports = {int(re.search(r":(\d+)/v1$", url).group(1)) for url in urls.values()}  # type: ignore[union-attr]
        assert ports == run.mock_ports
        assert urls["mock-a"] == urls["embed-a"]  # one mock per port the file names, as before


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_a_mock_keeps_its_port_unless_it_is_taken() -> None:
    example = load_config_file(REPO / "infra" / "config.example.yaml")
    free, held = _free_port(), _free_port()
    config = moved(example, {18101: free, 18102: held, 18103: _free_port()})
    with holding((held,)), mock_upstreams(config) as mocks:
        assert mocks[free].port == free  # a copy of the file loaded later still reaches it
        assert mocks[held].port not in (held, 0)
        answer = httpx.get(f"{mocks[held].base_url}/models", timeout=10)
        assert answer.status_code == 200  # a mock answers there, not the holder
        lines = mock_lines(moved(config, {p: m.port for p, m in mocks.items()}))
        assert f"  http://127.0.0.1:{mocks[held].port}/v1  mock-b, healthy" in lines
        assert f"  http://127.0.0.1:{free}/v1  mock-a, embed-a" in lines


def test_the_banner_names_the_status_page() -> None:
    with local_run() as run:
        page = run.value("status page:").split()[0]
        assert page == f"{run.base_url}/admin/"
        answer = httpx.get(page, timeout=30)
        assert answer.status_code == 200
        assert "text/html" in answer.headers["content-type"]


def _fake(bin_dir: Path, name: str, script: str) -> None:
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(0o755)


def _test_deps(tmp_path: Path, uid: int, *, curl: bool) -> subprocess.CompletedProcess[str]:
    """infra/test-deps.sh as user ``uid`` on a PATH of fakes, its chromium not there yet.

    The fake apt-get logs its arguments and, as Debian's package does, puts the
    browser where the script looks for it.
    """
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    chromium = tmp_path / "chromium"
    _fake(bin_dir, "id", f"echo {uid}")
    _fake(
        bin_dir,
        "apt-get",
        f'echo "$@" >> {tmp_path}/apt-get.log\n'
        f'case "$*" in *install*chromium*) printf "#!/bin/sh\\n" > {chromium}; '
        f"/bin/chmod +x {chromium};; esac",
    )
    if curl:
        _fake(bin_dir, "curl", "exit 0")
    return subprocess.run(  # noqa: S603 - our own script
        ["/bin/bash", str(REPO / "infra" / "test-deps.sh")],
        env={"PATH": str(bin_dir), "EDGEPROXY_CHROMIUM": str(chromium)},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_make_test_installs_a_missing_chromium_from_debian_when_root(tmp_path: Path) -> None:
    done = _test_deps(tmp_path, 0, curl=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == (
        "make test: installing chromium from the Debian archive (apt-get), "
        "for the browser tests and the README's examples"
    )
    assert (tmp_path / "apt-get.log").read_text().splitlines() == [
        "update -q",
        "install -y -q chromium",
    ]


def test_make_test_stops_at_once_with_the_command_when_not_root(tmp_path: Path) -> None:
    done = _test_deps(tmp_path, 1000, curl=False)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "make test: the tests need chromium curl; install with:  "
        "sudo apt-get install -y chromium curl"
    ]
    assert not (tmp_path / "apt-get.log").exists()


def test_make_test_checks_the_system_before_installing_anything() -> None:
    # make -n: the recipes make would run, in order; test-deps comes before the venvs.
    planned = subprocess.run(
        ["make", "-n", "-B", "test"],  # noqa: S607 - make from PATH, as a user
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.splitlines()
    first = next(i for i, line in enumerate(planned) if "infra/" in line)
    assert planned[first] == "infra/test-deps.sh"
    assert any("infra/venv.sh .venv '.[dev]'" in line for line in planned[first + 1 :])


@pytest.mark.slow  # about a minute: a fresh venv, installed from the package cache
def test_make_run_installs_the_runtime_only_and_answers(tmp_path: Path) -> None:
    venv = tmp_path / "venv-run"
    started = time.monotonic()
    proc = subprocess.Popen(  # noqa: S603 - make run, as a user types it
        ["make", "--no-print-directory", "run", f"RUN_VENV={venv}", "PORT=0"],  # noqa: S607
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # make and the runner it starts: one group to stop
    )
    assert proc.stdout is not None
    lines: list[str] = []
    try:
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if len(lines) > 2 and lines[-2].startswith("or at the table itself"):
                break
        steps = [line for line in lines if line.startswith("make run: ")]
        banner = LocalRun(lines[lines.index(steps[-1]) + 1 :])
        answer = _chat(banner, "fast-chat")
        first_answer = time.monotonic() - started
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        proc.stdout.close()
    assert answer.status_code == 200, (answer.text, lines)
    assert [re.sub(r" \(.*", "", s) for s in steps if "..." not in s] == [
        f"make run: creating {venv}",
        f"make run: updating pip in {venv}",
        f"make run: installing .[local,otel] into {venv}",
        "make run: starting the embedded DynamoDB, the mock upstreams and the gateway",
    ]
    assert "Editable" not in "\n".join(lines)  # setuptools' notice stays off the screen
    listed = subprocess.run(  # noqa: S603
        [str(venv / "bin" / "python"), "-m", "pip", "list", "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    installed = {p["name"].lower() for p in json.loads(listed.stdout)}
    assert {"edgeproxy", "uvicorn", "uvloop", "moto", "aioboto3", "opentelemetry-sdk"} <= installed
    assert not installed & DEV_TOOLS, installed & DEV_TOOLS
    print(f"fresh venv to first answer: {first_answer:.1f} s")
