"""Instructions, not seconds: the built functions' import and warm event under valgrind.

    .venv/bin/python -m bench.instructions --build-dir NEW [--baseline OLD] [--events 4 24]

On a loaded machine CPU time moves by a third from one minute to the next; the
number of instructions a process runs does not. Each figure is one fresh
``python3.12 -I -S -B`` (``bench/instructions_child.py``) under ``valgrind
--tool=cachegrind --cache-sim=no``, against the bench's armed stub store and
mock upstream (as ``bench.built``):

- ``import``: ``import app`` minus the bare interpreter's start;
- ``per_event``: (a process serving ``events[1]`` events - one serving
  ``events[0]``) / the difference: a warm event, clients built;
- ``first_event``: a process serving one event minus the import.

For the proxy and both scheduled jobs (a job's warm run is its second one).
Instructions are not CPU time (a cache miss costs more than an add), but the
same binary and inputs give the same count whatever the load, so the ratio of
two builds is the one to read.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run as a script: make the bench package importable

from bench import built, built_jobs  # noqa: E402
from bench.coldstart import lambda_env  # noqa: E402
from bench.processes import Stack, put_admin_key  # noqa: E402
from bench.workloads import CLIENT_KEY  # noqa: E402

CHILD = Path(__file__).with_name("instructions_child.py")
REFS = re.compile(r"I\s+refs:\s+([\d,]+)")
FUNCTIONS = {
    "ProxyFunction": "chat.json",
    **{name: event for name, (event, _memory) in built_jobs.JOBS.items()},
}


def count(build_dir: Path, function: str, event: Path, events: str, env: dict[str, str]) -> tuple[int, int]:  # fmt: skip
    """(instructions, modules loaded) of one child serving ``events`` events."""
    from tests.handlers.artifact import lambda_python  # the bench's harness only

    with tempfile.TemporaryDirectory() as work:
        out = Path(work) / "out.json"
        result = subprocess.run(  # noqa: S603 - our own child script
            [
                *("valgrind", "--tool=cachegrind", "--cache-sim=no"),
                f"--cachegrind-out-file={work}/cg.out",
                *(str(lambda_python()), "-I", "-S", "-B", str(CHILD)),
                *(str(build_dir / function), str(build_dir / "SharedLayer" / "python")),
                *(str(event), str(out), events),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            timeout=600,
            check=False,
        )
        found = REFS.search(result.stderr)
        if result.returncode != 0 or found is None:
            raise RuntimeError(result.stderr[-3000:])
        return int(found.group(1).replace(",", "")), len(json.loads(out.read_text())["modules"])


def measure(build_dir: Path, env: dict[str, str], events: tuple[int, int], work: Path, functions: list[str]) -> dict[str, Any]:  # fmt: skip
    """Each of ``functions``' instruction counts (millions) and modules after import."""
    chat = json.loads((ROOT / "events/chat.json").read_text())
    chat["headers"]["authorization"] = f"Bearer {CLIENT_KEY}"
    (work / "chat.json").write_text(json.dumps(chat))
    bare, _ = count(build_dir, "ProxyFunction", work / "chat.json", "none", env)
    out: dict[str, Any] = {}
    for function in functions:
        event_name = FUNCTIONS[function]
        event = work / "chat.json" if function == "ProxyFunction" else ROOT / "events" / event_name
        imported, modules = count(build_dir, function, event, "0", env)
        one, _ = count(build_dir, function, event, "1", env)
        low, _ = count(build_dir, function, event, str(events[0]), env)
        high, _ = count(build_dir, function, event, str(events[1]), env)
        out[function] = {
            "modules_after_import": modules,
            "import_mi": (imported - bare) / 1e6,
            "first_event_mi": (one - imported) / 1e6,
            "per_event_mi": (high - low) / (events[1] - events[0]) / 1e6,
        }
    return out


def _ratios(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    return {k: v / before[k] for k, v in after.items() if before[k]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--build-dir", type=Path, required=True, help="a sam build directory")
    parser.add_argument("--baseline", type=Path, help="another sam build, counted the same way")
    parser.add_argument("--events", type=int, nargs=2, default=(4, 24))
    parser.add_argument("--functions", nargs="+", choices=list(FUNCTIONS), default=list(FUNCTIONS))
    plan = parser.parse_args(argv)
    builds = {"after": plan.build_dir, **({"before": plan.baseline} if plan.baseline else {})}
    table = f"bench-{uuid.uuid4().hex[:8]}"
    result: dict[str, Any] = {}
    with Stack.start(table, stub=True) as stack, tempfile.TemporaryDirectory() as work:
        put_admin_key(stack.store_url)  # the ssm: admin key lambda_env names
        for build_dir in builds.values():  # the store sees every read once
            built.fresh_runs(build_dir, stack.store_url, table, 1)
            built_jobs.measure(build_dir, stack.store_url, table, 1)
        stack.arm_stub()
        # One hash seed: string hashing, and with it dict and set layouts, the same each run.
        env = {**lambda_env(stack.store_url, table), "PYTHONHASHSEED": "0"}
        for side, build_dir in builds.items():
            result[side] = measure(build_dir, env, tuple(plan.events), Path(work), plan.functions)  # type: ignore[arg-type]
    if "before" in result:
        result["after_over_before"] = {
            function: _ratios(figures, result["before"][function])
            for function, figures in result["after"].items()
        }
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
