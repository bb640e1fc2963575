"""``make bench``: how much edgeproxy adds, side by side with a direct call.

    .venv/bin/python bench/run.py            # full run, ~4 minutes; writes bench/results/
    .venv/bin/python bench/run.py --smoke    # CI: the same harness, tiny loops, < 60 s

Prints the results table and the targets (PASS/MISS; a miss is reported, not
fatal). Exits non-zero only when the harness itself breaks, e.g. a request
fails or a process dies.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run as a script: make the bench package importable

from bench import harness, report, wrk  # noqa: E402


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; write results (full runs) and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--smoke", action="store_true", help="tiny loops (CI)")
    parser.add_argument(
        "--install-wrk",
        choices=("auto", "yes", "no"),
        default="auto",
        help="apt-get install wrk if missing (auto: full runs only)",
    )
    parser.add_argument("--out", type=Path, default=None, help="results directory")
    args = parser.parse_args(argv)
    plan = harness.Plan.of(args.smoke)
    install = args.install_wrk == "yes" or (args.install_wrk == "auto" and not args.smoke)
    binary = wrk.find_wrk(install)
    if binary is None:
        print("wrk not found: every figure comes from bench.client (asyncio) instead", flush=True)
    started = time.monotonic()
    results = harness.run(plan, binary)
    results["meta"] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "smoke": plan.smoke,
        "rounds": plan.rounds,
        "seconds": plan.seconds,
        "nproc": os.cpu_count(),
        "cpu": _cpu_model(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "wrk": wrk.version(binary) if binary else None,
        "elapsed_s": round(time.monotonic() - started, 1),
    }
    summary = report.summarize(results)
    goals = report.targets(results, summary)
    text = report.markdown(results, summary, goals)
    print()
    print(text)
    print(f"(took {results['meta']['elapsed_s']} s)")
    out = args.out or (ROOT / "bench" / "results" if not plan.smoke else None)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.md").write_text(text)
        data = {"summary": summary, "targets": goals, "raw": results}
        (out / "results.json").write_text(json.dumps(data, indent=1, default=str) + "\n")
        print(f"wrote {out / 'results.md'} and {out / 'results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
