"""The README's examples run as they stand against ``make run``: every Python block and every
curl block of the sections a user follows first ("Run it locally" to "Test it").

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
from tests.fixtures.local_run import REPO, LocalRun, local_run

BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


def _blocks(language: str) -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Run it locally") : text.index("## Test it")]
    return [code for lang, code in BLOCK.findall(section) if lang == language]


PYTHON = _blocks("python")
CURL = [code for code in _blocks("bash") if "curl " in code]


@pytest.fixture(scope="module")
def run() -> Iterator[LocalRun]:
    with local_run() as started:
        yield started


def _env(run: LocalRun) -> dict[str, str]:
    return {
        **os.environ,
        "CLIENT_KEY": run.value("client key:"),
        "EDGEPROXY_ADMIN_KEY": run.value("admin key:"),
    }


def _here(code: str, run: LocalRun) -> str:
    return code.replace("http://127.0.0.1:8080", run.base_url)


def test_the_sections_have_examples_to_run() -> None:
    # A renamed heading or fence would make the tests below run nothing.
    assert len(PYTHON) >= 6
    assert len(CURL) >= 2


@pytest.mark.parametrize("code", PYTHON, ids=lambda c: c.splitlines()[-1][:40])
def test_each_python_example_runs_on_its_own(run: LocalRun, code: str) -> None:
    done = subprocess.run(  # noqa: S603 - the README's own example
        [sys.executable, "-c", _here(code, run)],
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


@pytest.mark.parametrize("code", CURL, ids=lambda c: c.splitlines()[0][:40])
def test_each_curl_example_runs_on_its_own(run: LocalRun, code: str, tmp_path: Path) -> None:
    # The placeholder line (`export CLIENT_KEY=ep-...`) stands for the keys the banner
    # printed: the environment holds them instead.
    lines = [line for line in _here(code, run).splitlines() if "=ep-..." not in line]
    script = tmp_path / "example.sh"
    script.write_text("set -euo pipefail\n" + "\n".join(lines) + "\n")
    done = subprocess.run(  # noqa: S603 - the README's own example
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
    """Every ``edgeproxy ...`` command line the README's shell blocks show."""
    text = (REPO / "README.md").read_text()
    found = []
    for lang, code in BLOCK.findall(text):
        for line in code.splitlines() if lang in ("bash", "") else []:
            command = re.split(r"\s+#|\s*[>|]", line.strip())[0]
            command = re.sub(r"^(\S+=\S+\s+)*", "", command)  # leading VAR=value
            if re.match(r"^(\.venv(-run)?/bin/)?edgeproxy \w", command):
                found.append(command)
    return found


COMMANDS = _commands()


def test_the_readme_shows_commands() -> None:
    assert len(COMMANDS) >= 20


@pytest.mark.parametrize("line", COMMANDS)
def test_each_command_the_readme_shows_exists(
    line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # --help after the words shown: argparse exits 0 for a real command and option set,
    # 2 for a command or option that does not exist. Nothing is contacted.
    with pytest.raises(SystemExit) as exited:
        main([*line.split()[1:], "--help"])
    assert exited.value.code == 0, capsys.readouterr().err
