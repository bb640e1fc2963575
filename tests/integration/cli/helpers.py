"""Running the installed ``edgeproxy`` console script as a person does: a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

# The console script `pip install -e .` (what `make run` does) puts beside the interpreter.
SCRIPT = Path(sys.executable).with_name("edgeproxy")
REPO = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class Ran:
    status: int
    out: str
    err: str

    @property
    def one_line_error(self) -> bool:
        """Exactly one line on stderr, starting ``edgeproxy:``, and no traceback."""
        lines = self.err.splitlines()
        return (
            len(lines) == 1 and lines[0].startswith("edgeproxy: ") and "Traceback" not in self.err
        )


def clean_env(**extra: str) -> dict[str, str]:
    """A shell with nothing edgeproxy or AWS set (as a new terminal), plus ``extra``."""
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
    # If anything still tried AWS it would meet a closed port, not an account.
    keep["AWS_ENDPOINT_URL"] = "http://127.0.0.1:9"
    keep["AWS_EC2_METADATA_DISABLED"] = "true"
    return {**keep, **extra}


def edgeproxy(*argv: str, env: dict[str, str], stdin: str | None = None) -> Ran:
    done = subprocess.run(  # noqa: S603 - our own console script
        [str(SCRIPT), *argv],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        check=False,
    )
    return Ran(done.returncode, done.stdout, done.stderr)
