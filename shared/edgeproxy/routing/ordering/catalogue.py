"""The strategy catalogue: what ``GET /admin/strategies``, ``edgeproxy strategies`` and the docs list.

Read from the registry itself, so it lists exactly what the configuration
is validated against (``routing.ordering.strategies`` is imported for its
registrations and ``reads_counters``).
"""

from __future__ import annotations

from typing import Any

from edgeproxy.config.router import RouterSettings
from edgeproxy.config.strategies import describe
from edgeproxy.routing.ordering.registry import REGISTRY
from edgeproxy.routing.ordering.strategies import reads_counters


def catalogue(router: RouterSettings | None = None) -> list[dict[str, Any]]:
    """Every registered strategy; ``router``: also which is the default and what it sets."""
    rows = []
    for spec in REGISTRY:
        row: dict[str, Any] = {
            "name": spec.name.value,
            "summary": spec.summary,
            "reads_counters": reads_counters(spec.name),
            "parameters": describe(spec.name),
        }
        if router is not None:
            row["default"] = spec.name is router.strategy
            row["configured"] = router.strategy_params.get(spec.name, {})
        rows.append(row)
    return rows


def _range(param: dict[str, Any]) -> str:
    low, high = param["minimum"], param["maximum"]
    if low is not None and high is not None:
        return f"{low} to {high}"
    if low is not None:
        return f">= {low}"
    return "any" if high is None else f"<= {high}"


def markdown_table() -> list[str]:
    """The catalogue as the Markdown table of docs/configuration.md, one line per parameter."""
    lines = [
        "| strategy | picks | parameter | type | range | default | meaning |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in catalogue():
        params = row["parameters"] or [None]
        for param in params:
            if param is None:
                cells = ["—", "", "", "", ""]
            else:
                default = "null" if param["default"] is None else str(param["default"])
                cells = [
                    f"`{param['name']}`",
                    param["type"],
                    _range(param),
                    f"`{default}`",
                    param["description"],
                ]
            lines.append(f"| `{row['name']}` | {row['summary']} | " + " | ".join(cells) + " |")
    return lines
