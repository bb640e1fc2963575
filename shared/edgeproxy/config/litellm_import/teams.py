"""What a LiteLLM config says about teams, as edgeproxy ``organizations:`` and ``teams:``.

LiteLLM keeps its teams, their keys and most of their limits in its
database; its ``config.yaml`` can only name teams in
``litellm_settings.default_team_settings`` (a list, one entry per team).
Each entry becomes a team of one organization, ``litellm`` (edgeproxy's
teams always belong to one; LiteLLM's organizations live in its database):

    team_id                      id (lower-cased, other characters as ``-``)
    team_alias                   name (else the id)
    max_budget                   budget_usd
    budget_duration              budget_period: 1d/24h daily, 7d/1w weekly, 30d/1mo monthly
    soft_budget                  soft_budget_ratio (soft_budget / max_budget)
    rpm_limit, tpm_limit         rpm_limit, tpm_limit
    max_parallel_requests        max_parallel_requests
    models                       models (those the import serves)
    metadata (string values)     tags

Everything else (callbacks and their keys, guardrails...) is reported as
dropped, naming the entry. ``default_team_params`` (LiteLLM's template for
teams it creates later) and ``max_end_user_budget`` (one budget for every
end user, with no team) are dropped with a pointer to ``end_user_limits``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from edgeproxy.config.litellm_import.report import Warnings

ORGANIZATION = "litellm"
SETTING = "default_team_settings"
PERIODS = {
    "1d": "daily",
    "24h": "daily",
    "7d": "weekly",
    "1w": "weekly",
    "30d": "monthly",
    "1mo": "monthly",
}
_COUNTS = ("rpm_limit", "tpm_limit", "max_parallel_requests")
_MAPPED = frozenset(
    {"team_id", "team_alias", "max_budget", "budget_duration", "soft_budget", "models"}
    | set(_COUNTS)
    | {"metadata"}
)
# The other team settings litellm_settings may hold: said as dropped, with where they go here.
HINTS = {
    "default_team_params": (
        " (LiteLLM's template for teams it creates; edgeproxy teams are created with their"
        " limits: edgeproxy teams create)"
    ),
    "max_end_user_budget": (
        " (end users' limits are a team's end_user_limits, in the teams: section or"
        " PATCH /admin/teams/{id})"
    ),
}


def _slug(raw: str) -> str:
    slug = re.sub(r"[^a-z0-9_-]", "-", raw.lower()).strip("-_")[:63]
    return slug if slug and slug[0].isalnum() else f"t{slug}"[:63]


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


def _team(entry: Mapping[str, Any], where: str, pools: set[str], w: Warnings) -> dict[str, Any]:
    raw = str(entry["team_id"])
    team: dict[str, Any] = {"id": _slug(raw), "organization_id": ORGANIZATION}
    if team["id"] != raw:
        w.add(where, f"team_id {raw!r} written as the id {team['id']!r} (ids are slugs)")
    alias = entry.get("team_alias")
    team["name"] = alias if isinstance(alias, str) and alias else raw
    budget = entry.get("max_budget")
    if budget is not None:
        if _number(budget):
            team["budget_usd"] = float(budget)
        else:
            w.add(where, f"max_budget {budget!r} is not a number >= 0; dropped")
    duration = entry.get("budget_duration")
    if duration is not None:
        if duration in PERIODS and "budget_usd" in team:
            team["budget_period"] = PERIODS[duration]
        else:
            w.add(
                where, f"budget_duration {duration!r}: edgeproxy's periods are {PERIODS}; dropped"
            )
    soft = entry.get("soft_budget")
    if soft is not None:
        if _number(soft) and team.get("budget_usd") and 0 < soft < team["budget_usd"]:
            team["soft_budget_ratio"] = round(float(soft) / team["budget_usd"], 6)
        else:
            w.add(where, f"soft_budget {soft!r} is not a share of max_budget below it; dropped")
    for name in _COUNTS:
        value = entry.get(name)
        if value is None:
            continue
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            team[name] = value
        else:
            w.add(where, f"{name} {value!r} is not an integer >= 0; dropped")
    models = entry.get("models")
    if isinstance(models, list):
        served = [m for m in models if m in pools]
        if len(served) < len(models):
            w.add(where, f"models {sorted(set(map(str, models)) - pools)}: not served; left out")
        if served:
            team["models"] = served
    elif models is not None:
        w.add(where, "models is not a list; dropped")
    metadata = entry.get("metadata")
    if isinstance(metadata, Mapping):
        tags = {str(k): v for k, v in metadata.items() if isinstance(v, str)}
        if len(tags) < len(metadata):
            w.add(where, "metadata values that are not strings dropped (tags are strings)")
        if tags:
            team["tags"] = tags
    for name in sorted(set(entry) - _MAPPED):
        w.add(where, f"{name} has no equivalent; dropped")
    return team


def teams(
    settings: Mapping[str, Any], pools: set[str], w: Warnings
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The organizations and teams of ``litellm_settings.default_team_settings``."""
    given = settings.get(SETTING)
    if given is None:
        return [], []
    if not isinstance(given, list):
        w.add(f"litellm_settings.{SETTING}", "not a list; dropped")
        return [], []
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index, entry in enumerate(given):
        where = f"litellm_settings.{SETTING}[{index}]"
        if not isinstance(entry, Mapping) or not isinstance(entry.get("team_id"), str | int):
            w.add(where, "no team_id; dropped")
            continue
        team = _team(entry, where, pools, w)
        if team["id"] in seen:
            w.add(where, f"a second team {team['id']!r}; dropped")
            continue
        seen.add(team["id"])
        out.append(team)
    if not out:
        return [], []
    org = {"id": ORGANIZATION, "name": "Imported from LiteLLM"}
    return [org], out
