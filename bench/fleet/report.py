"""The simulator's Markdown report and its PNG plots (matplotlib, imported only here)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bench.fleet.engine import Outcome
from bench.fleet.moto_fleet import MotoOutcome


def exactness(admitted: int, limit: int, refused: int) -> str:
    """``exact``, ``over by n``, ``under by n`` (refused below the limit), or ``limit not reached``."""
    if admitted > limit:
        return f"over by {admitted - limit}"
    if admitted == limit:
        return "exact"
    return f"under by {limit - admitted}" if refused else "limit not reached"


def model_rows(runs: list[Outcome]) -> list[str]:
    """The capacity model's table."""
    head = (
        "| table | rate/s | shards | instances | admitted / limit | exactness | 503s | lost "
        "outcomes | throttled calls | failed conditions | p50 / p99 added ms | RRU / WRU per "
        "request | largest item |"
    )
    rows = [head, "|" + "---|" * 13]
    for o in runs:
        s = o.scenario
        rows.append(
            f"| {o.partitions0} partitions | {s.rate:.0f} | {s.shards} | {o.peak_instances} | "
            f"{o.admitted} / {s.rpm_limit} | {exactness(o.admitted, s.rpm_limit, o.refused_at_limit)}"
            f" | {o.store_errors} | {o.lost_outcomes} | {o.throttles} | {o.condition_failures} | "
            f"{o.p(0.5):.1f} / {o.p(0.99):.1f} | {o.read_units / o.offered:.2f} / "
            f"{o.write_units / o.offered:.2f} | {o.largest_item} B |"
        )
    return rows


def moto_rows(runs: list[MotoOutcome]) -> list[str]:
    """The embedded store's table."""
    rows = [
        "| target rate/s | achieved/s | instances | shards | admitted / limit | exactness | "
        "counted in the table | failed conditions | p50 / p99 store ms | calls per request | "
        "RRU / WRU per request (est.) |",
        "|" + "---|" * 11,
    ]
    for o in runs:
        n = max(1, o.offered)
        rows.append(
            f"| {o.rate:.0f} | {o.offered / max(o.elapsed, 1e-9):.0f} | {o.instances} | {o.shards} | "
            f"{o.admitted} / {o.rpm_limit} | {exactness(o.admitted, o.rpm_limit, o.refused)} | "
            f"{o.counted} | {o.condition_failures} | {o.p(0.5):.0f} / {o.p(0.99):.0f} | "
            f"{(o.reads + o.writes) / n:.2f} | {0.5 * o.read_keys / n:.2f} / {o.writes / n:.2f} |"
        )
    return rows


def plots(runs: list[Outcome], out: Path) -> list[str]:
    """PNG plots of the warm table's runs by rate, sharding off and on; their file names."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    warm = [o for o in runs if o.partitions0 == max(r.partitions0 for r in runs)]
    off = [o for o in warm if o.scenario.shards == 1]
    on = [o for o in warm if o.scenario.shards > 1]
    charts: list[tuple[str, str, Callable[[Outcome], float]]] = [
        ("throttles.png", "throttled store calls per request", lambda o: o.throttles / o.offered),
        ("p99.png", "p99 added store latency (ms)", lambda o: o.p(0.99)),
        (
            "errors.png",
            "503s + lost outcomes per request",
            lambda o: (o.store_errors + o.lost_outcomes) / o.offered,
        ),
        (
            "units.png",
            "read + write units per request",
            lambda o: (o.read_units + o.write_units) / o.offered,
        ),
    ]
    names = []
    for name, label, value in charts:
        fig, ax = plt.subplots(figsize=(5, 3.2))
        for series, tag in ((off, "one item (shards 1)"), (on, "sharded")):
            ax.plot([o.scenario.rate for o in series], [value(o) for o in series], "o-", label=tag)
        ax.set_xscale("log")
        ax.set_xlabel("requests per second (one deployment)")
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / name, dpi=90)
        plt.close(fig)
        names.append(name)
    return names
