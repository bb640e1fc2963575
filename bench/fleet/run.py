"""``make simulate``: the fleet simulator's runs and its report (bench/results/fleet/).

python -m bench.fleet.run            # every run: a few minutes on 2 cores
python -m bench.fleet.run --quick    # a smoke run of each leg (seconds)
"""

from __future__ import annotations

import argparse
import datetime
import math
import time
from pathlib import Path

from bench.fleet.bucket_size import BucketSizes, bucket_runs
from bench.fleet.bucket_size import report as bucket_rows
from bench.fleet.capacity import CapacityModel
from bench.fleet.engine import Fleet, Outcome, Scenario
from bench.fleet.log_load import LogOutcome, log_rows
from bench.fleet.log_load import run as log_run
from bench.fleet.moto_fleet import MotoOutcome, moto_runs
from bench.fleet.prefill import PrefillOutcome
from bench.fleet.prefill import rows as prefill_rows
from bench.fleet.prefill import runs as prefill_runs
from bench.fleet.report import model_rows, moto_rows, plots
from bench.fleet.team_load import TeamOutcome, team_rows, team_runs
from edgeproxy.state import usage_log as layout

RESULTS = Path(__file__).resolve().parents[1] / "results" / "fleet"
RATES = (100, 500, 1000, 2000, 5000)
SECONDS = 8.0
WARM_PARTITIONS = 64  # a table that served this peak before (on-demand keeps its partitions)
NEW_PARTITIONS = 4  # a new on-demand table: 4,000 write units at once
LOG_RATES = (1000, 10000, 20000)  # the request log's runs (each unsharded and sharded)
LOG_SECONDS = 3.0


def shards_for(rate: float) -> int:
    """The shard count the README recommends: one per ~160 requests per second, at least 2."""
    return int(min(32, max(2, 2 ** math.ceil(math.log2(rate / 160)))))


def model_runs(rates: tuple[int, ...], seconds: float, *, new_table_rate: int) -> list[Outcome]:
    """Each rate with shards off and on on a warm table, and one rate on a new table."""
    plan = [(r, n, WARM_PARTITIONS) for r in rates for n in (1, shards_for(r))]
    plan += [(new_table_rate, n, NEW_PARTITIONS) for n in (1, shards_for(new_table_rate))]
    runs = []
    for rate, shards, partitions in plan:
        limit = int(0.7 * rate * seconds)  # reached 70% into the run: exactness is checked
        scenario = Scenario(rate=rate, seconds=seconds, shards=shards, rpm_limit=limit)
        runs.append(Fleet(scenario, CapacityModel(partitions=partitions)).run())
        print(f"model {rate}/s shards {shards} partitions {partitions}: done", flush=True)
    return runs


def log_runs(rates: tuple[int, ...], seconds: float) -> list[LogOutcome]:
    """The request log at each rate, unsharded and on ``LOG_SHARDS``, on a warm table."""
    plan = [(r, n) for r in rates for n in (1, layout.LOG_SHARDS)]
    runs = []
    for rate, shards in plan:
        runs.append(log_run(rate, seconds, shards, WARM_PARTITIONS))
        print(f"log {rate}/s shards {shards}: done", flush=True)
    return runs


def report(
    runs: list[Outcome],
    motos: list[MotoOutcome],
    out: Path,
    took: float,
    prefill: list[PrefillOutcome] | None = None,
    logs: list[LogOutcome] | None = None,
    buckets: list[BucketSizes] | None = None,
    teams: list[TeamOutcome] | None = None,
) -> Path:
    """Write REPORT.md and the plots into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    names = plots(runs, out)
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"# Fleet simulation ({when}, {took:.0f} s)",
        "",
        "One deployment with an rpm limit (70% of the offered requests), driven by",
        "one-request-at-a-time instances without coalescing. Sharding on: `counter_shards`",
        "as `shards_for(rate)` picks it. Admission exactness: `exact` when the admitted",
        "count equals the limit; over-admission never happened in any run.",
        "",
        "## DynamoDB capacity model (virtual time)",
        "",
        "Modelled (bench/fleet/capacity.py, engine.py): per-partition 1,000 WCU and 3,000",
        "RCU per second, item sizes and their units, the 400 KB limit, split for heat",
        f"after 15 s of throttling (not reached in these {SECONDS:.0f} s runs), a 5 ms store",
        "round trip, a 50-150 ms upstream, the client's retries. Real: the shard keys, the",
        "allowance arithmetic and the outcome items' attribute names are the gateway's own.",
        "",
        *model_rows(runs),
        "",
        *[f"![{n}]({n})" for n in names],
        "",
        "## The request log on the capacity model (virtual time)",
        "",
        "Beside the counters: every request a Lambda's, one record PutItem and one aggregate",
        "ADD (bench/fleet/log_load.py), one key, model and deployment (the hottest aggregate),",
        f"{LOG_SECONDS:.0f} s per run on a {WARM_PARTITIONS}-partition table. Shards 1: the",
        "unsharded layout (`log#<hour>`, `usage#<day>`); a lost write is a throttle retried once.",
        "",
        *log_rows(logs or []),
        "",
        "## Embedded store (moto, real time)",
        "",
        "Real: the gateway's DynamoStore, one DynamoDB client per instance, the moto server,",
        "concurrency, failed conditions. Not DynamoDB: moto has no partitions and serves a",
        "few hundred calls per second on this shared 2-core machine, so the achieved rate is",
        "what it could serve, and latency is moto's queue.",
        "",
        *moto_rows(motos),
        "",
    ]
    if teams:
        lines += [
            "## A hot team's minute bucket (virtual time, bench/fleet/team_load.py)",
            "",
            "A team with an rpm limit (70% of the offered requests) and a tpm limit: each",
            "request's admission and settlement transactions on the team's bucket (2 write",
            "units each), planned by the gateway's own core (shares, start shard, borrowing,",
            "shards seen full skipped by their process), 200 processes, a 64-partition table.",
            "Shards 1: one item, capped near 250 requests a second; sharded: `counter_shards`",
            "one per ~200 requests a second. `counted` is the shards' sum: never over the limit.",
            "",
            *team_rows(teams),
            "",
        ]
    if buckets:
        lines += [
            "## The minute bucket over a whole minute (embedded store, bench/fleet/bucket_size.py)",
            "",
            "One deployment with rpm and tpm limits; each request's start count and outcome",
            "written by the gateway's DynamoStore, the item read back after every write and",
            "sized by DynamoDB's rule; a write is charged per started KB of the larger of the",
            "item's sizes before and after it. The runs above last seconds, so their buckets",
            "stay small: these are what a whole minute's writes cost.",
            "",
            bucket_rows(buckets),
            "",
        ]
    if prefill:
        lines += [
            "## 001's prefill rule (virtual time)",
            "",
            "Four prefill-bound replicas of equal weight at 10,000 prompt tokens/s each, 60 %",
            "loaded by Poisson arrivals, 1 % of them large (200,000-300,000 uncached tokens),",
            "routed by the gateway's core on a fleet-wide read 10 ms old (bench/fleet/prefill.py).",
            "`fifo`: a replica prefills one prompt at a time; `shared`: it shares its rate among",
            "every prompt it holds (chunked prefill). TTFT: arrival to the end of its prefill.",
            "",
            *prefill_rows(prefill),
            "",
        ]
    path = out / "REPORT.md"
    path.write_text("\n".join(lines))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a smoke run of each leg")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    began = time.monotonic()
    if args.quick:
        runs = model_runs((100, 1000), 2.0, new_table_rate=1000)
        logs = log_runs((1000,), 0.5)
        motos = moto_runs([(50, 1.0, 20, 1, 35), (50, 1.0, 20, 4, 35)])
        prefill = prefill_runs(seeds=1, seconds=300.0)
        buckets = bucket_runs([1])
        teams = team_runs((1000,), 1.0)
    else:
        runs = model_runs(RATES, SECONDS, new_table_rate=1000)
        logs = log_runs(LOG_RATES, LOG_SECONDS)
        motos = moto_runs([(100, 3.0, 100, 1, 210), (100, 3.0, 100, 4, 210)])
        prefill = prefill_runs(seeds=3, seconds=3600.0)
        buckets = bucket_runs([1, 10, 100])
        teams = team_runs((250, 500, 1000, 2000), 4.0)
    took = time.monotonic() - began
    print(report(runs, motos, args.out, took, prefill, logs, buckets, teams))


if __name__ == "__main__":
    main()
