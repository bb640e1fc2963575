"""The docs' examples run as they stand against ``make run``: every code block the README or
a page of the documentation site marks runnable (``<!-- runnable -->`` on the line above its
fence; docs/contributing.md, "Runnable examples").

Each block runs on its own (a fresh interpreter or shell), so a block that needs a name
from an earlier one fails here. The only change made to a block is the gateway's address:
the runner serves on a free port instead of 8080, beside whatever else runs on the machine.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from edgeproxy.cli import main
from tests.fixtures.docs import README, Block, every_block
from tests.fixtures.local_run import REPO, LocalRun, local_run

BLOCKS = every_block()
RUNNABLE = [block for block in BLOCKS if block.runnable]
PYTHON = [block for block in RUNNABLE if block.language == "python"]
SHELL = [block for block in RUNNABLE if block.language == "bash"]


@pytest.fixture(scope="module")
def run() -> Iterator[LocalRun]:
    with local_run() as started:
        yield started


def _env(run: LocalRun) -> dict[str, str]:
    # As a reader has it after the banner's exports and `. .venv-run/bin/activate`: the
    # keys, the gateway for the CLI, and plain `edgeproxy` on PATH.
    return {
        **os.environ,
        "CLIENT_KEY": run.value("client key:"),
        "EDGEPROXY_ADMIN_KEY": run.value("admin key:"),
        "EDGEPROXY_URL": run.base_url,
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    }


def _here(code: str, run: LocalRun) -> str:
    return code.replace("http://127.0.0.1:8080", run.base_url)


def test_the_docs_have_examples_to_run() -> None:
    # A lost marker or a renamed fence would make the tests below run nothing.
    assert len(PYTHON) >= 7
    assert len(SHELL) >= 5
    assert {block.path for block in RUNNABLE if block.path == README}, "the README runs none"
    assert {block.path.name for block in RUNNABLE} >= {"README.md", "local.md", "api.md"}


def test_every_runnable_block_is_python_or_bash() -> None:
    # A marker on another language would be silently skipped.
    assert [b.where for b in RUNNABLE if b.language not in ("python", "bash")] == []


@pytest.mark.parametrize("block", PYTHON, ids=lambda b: b.where)
def test_each_python_example_runs_on_its_own(run: LocalRun, block: Block) -> None:
    done = subprocess.run(  # noqa: S603 - the docs' own example
        [sys.executable, "-c", _here(block.code, run)],
        env=_env(run),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip(), "the example printed nothing"
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("block", SHELL, ids=lambda b: b.where)
def test_each_shell_example_runs_on_its_own(run: LocalRun, block: Block, tmp_path: Path) -> None:
    # The placeholder line (`export CLIENT_KEY=ep-...`) stands for the keys the banner
    # printed: the environment holds them instead.
    lines = [line for line in _here(block.code, run).splitlines() if "=ep-..." not in line]
    script = tmp_path / "example.sh"
    script.write_text("set -euo pipefail\n" + "\n".join(lines) + "\n")
    done = subprocess.run(  # noqa: S603 - the docs' own example
        [shutil.which("bash") or "/bin/bash", str(script)],
        env=_env(run),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert '"error"' not in done.stdout, done.stdout
    assert done.stdout.strip()


def _commands() -> list[str]:
    """Every ``edgeproxy ...`` command line the README's and the pages' shell blocks show."""
    found = []
    for block in BLOCKS:
        for line in block.code.splitlines() if block.language in ("bash", "") else []:
            command = re.split(r"\s+#|\s*[>|]", line.strip())[0]
            command = re.sub(r"^(\S+=\S+\s+)*", "", command)  # leading VAR=value
            if re.match(r"^(\.venv(-run)?/bin/)?edgeproxy \w", command):
                found.append(command)
    return found


COMMANDS = _commands()


def test_the_docs_show_commands() -> None:
    assert len(COMMANDS) >= 20


@pytest.mark.parametrize("line", COMMANDS)
def test_each_command_the_docs_show_exists(line: str, capsys: pytest.CaptureFixture[str]) -> None:
    # --help after the words shown: argparse exits 0 for a real command and option set,
    # 2 for a command or option that does not exist. Nothing is contacted.
    with pytest.raises(SystemExit) as exited:
        main([*line.split()[1:], "--help"])
    assert exited.value.code == 0, capsys.readouterr().err
