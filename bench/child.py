"""One fresh ``python3.12 -I -S -B`` child script run on a built function, as Lambda starts one.

``bench/built_child.py`` (the proxy) and ``bench/job_child.py`` (the jobs) are
those scripts: standard library only, the built function and its layer the
only entries on ``sys.path`` (isolated mode puts nothing else there, which is
also why the two scripts cannot share code with each other or with this one).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any


def run_child(
    script: Path, build_dir: Path, function: str, args: list[str], env: dict[str, str]
) -> tuple[float, dict[str, Any]]:
    """(the monotonic time it was spawned, what the script wrote to its output file)."""
    from tests.handlers.artifact import lambda_python  # the bench's harness only

    with tempfile.TemporaryDirectory() as work:
        out = Path(work) / "out.json"
        spawned = time.monotonic()
        subprocess.run(  # noqa: S603 - our own child script
            [
                *(str(lambda_python()), "-I", "-S", "-B", str(script)),
                *(str(build_dir / function), str(build_dir / "SharedLayer" / "python")),
                *args[:1],
                str(out),
                *args[1:],
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            check=True,
            timeout=120,
        )
        return spawned, json.loads(out.read_text())
