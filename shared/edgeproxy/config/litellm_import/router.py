"""A whole LiteLLM proxy ``config.yaml`` as an edgeproxy configuration document.

    model_list                       deployments (``config/litellm_import/entries.py``)
    litellm_params.order             priority (order 1 is tried first; no order: after them)
    router_settings.routing_strategy router.strategy
    router_settings.allowed_fails    router.circuit.allowed_fails
    router_settings.cooldown_time    router.circuit.cooldown_seconds
    router_settings.retry_after      router.circuit.retry_after_seconds
    timeout / stream_timeout         execution_policies ... response_ms (chat, completions,
    num_retries                      embeddings), max_attempts = num_retries + 1; per
                                     deployment as execution_policy_overrides (tighten only)
    fallbacks                        fallbacks (reason general)
    context_window_fallbacks         fallbacks (reason context_window)
    content_policy_fallbacks         fallbacks (reason content_policy)
    litellm_settings.default_team_settings
                                     organizations / teams (``config/litellm_import/teams.py``)

Everything else is reported as a warning. ``litellm_settings`` may hold
``fallbacks``, ``num_retries`` and ``request_timeout`` too.

    converted = convert(yaml.safe_load(text), os.environ)
    print(yaml.safe_dump(converted.document)); print(*converted.warnings, sep="\\n")
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from edgeproxy.config.litellm_import import checks, teams
from edgeproxy.config.litellm_import.entries import Warnings, deployment
from edgeproxy.config.litellm_import.rules import state_entry_rules
from edgeproxy.config.policies import Operation, default_execution_policies

STRATEGIES = {
    "simple-shuffle": "simple-shuffle",
    "least-busy": "least-busy",
    "usage-based-routing": "usage-based-tpm",
    "usage-based-routing-v2": "usage-based-tpm",
    "latency-based-routing": "latency-based",
    "cost-based-routing": "price-based",
}
FALLBACKS = {
    "fallbacks": "general",
    "context_window_fallbacks": "context_window",
    "content_policy_fallbacks": "content_policy",
}
_TIMED = (Operation.CHAT, Operation.COMPLETIONS, Operation.EMBEDDINGS)
_POLICY_KEYS = ("timeout", "stream_timeout", "num_retries")
_CIRCUIT = (
    ("allowed_fails", "allowed_fails"),
    ("cooldown_time", "cooldown_seconds"),
    ("retry_after", "retry_after_seconds"),
)
_ROUTER_KEYS = frozenset({"routing_strategy", *(theirs for theirs, _ in _CIRCUIT)})
_LITELLM_ALIASES = {"request_timeout": "timeout", "num_retries": "num_retries"}
_TOP = frozenset({"model_list", "router_settings", "litellm_settings"})


@dataclass(frozen=True, slots=True)
class Converted:
    """``errors``: the entries not converted; ``origins``: the entry of each deployment."""

    document: dict[str, Any]
    warnings: list[str]
    errors: list[str] = field(default_factory=list)
    origins: list[str] = field(default_factory=list)


def convert(litellm: Mapping[str, Any], environ: Mapping[str, str]) -> Converted:
    """The configuration document for a parsed LiteLLM config, and what could not be mapped."""
    warnings = Warnings()
    router = litellm.get("router_settings") or {}
    settings = litellm.get("litellm_settings") or {}
    for name, section in (("router_settings", router), ("litellm_settings", settings)):
        if not isinstance(section, Mapping):
            warnings.add(name, "not a mapping; ignored")
    router = router if isinstance(router, Mapping) else {}
    settings = settings if isinstance(settings, Mapping) else {}
    deployments = _deployments(litellm.get("model_list"), environ, warnings)
    out: dict[str, Any] = {}
    section = _router(router, settings, warnings)
    policies = _policies(router, settings, warnings)
    if policies is not None:
        section["execution_policies"] = policies
    if section:
        out["router"] = section
    limits = policies or _default_matrix()
    for dep in deployments:
        _overrides(dep, limits, warnings)
    deployments = checks.valid(deployments, warnings)
    checks.cannot_authenticate(deployments, warnings)
    origins = [dep.pop("_entry") for dep in deployments]
    out["deployments"] = deployments
    pools = {d["model"] for d in deployments}
    chains = _fallbacks(router, pools, "router_settings", warnings)
    chains += _fallbacks(settings, pools, "litellm_settings", warnings)
    if chains:
        out["fallbacks"] = chains
    organizations, team_list = teams.teams(settings, pools, warnings)
    if team_list:
        out["organizations"], out["teams"] = organizations, team_list
    mapped = set(FALLBACKS) | set(_LITELLM_ALIASES) | {theirs for theirs, _ in _CIRCUIT}
    mapped.add(teams.SETTING)
    for name in sorted(set(settings) - mapped):
        warnings.add("litellm_settings", f"{name} has no equivalent; dropped{_HINTS.get(name, '')}")
    general = litellm.get("general_settings") or {}
    for name in general if isinstance(general, Mapping) else ["(the section)"]:
        hint = " (client keys: edgeproxy keys create)" if name == "master_key" else ""
        warnings.add("general_settings", f"{name} has no equivalent; dropped{hint}")
    for name in sorted(set(litellm) - _TOP - {"general_settings"}):
        warnings.add(name, "has no equivalent (credentials are references); dropped")
    notes = list(warnings)
    # The egress and credential rules, stated in the output: so that it loads as written.
    state_entry_rules(out, notes)
    return Converted(out, notes, list(warnings.errors), origins)


_HINTS = teams.HINTS  # LiteLLM's other team settings, said as dropped with where they go


def _default_matrix() -> dict[str, Any]:
    return {op.value: p.model_dump(by_alias=True) for op, p in default_execution_policies().items()}


def _deployments(model_list: Any, environ: Mapping[str, str], w: Warnings) -> list[dict[str, Any]]:
    if not isinstance(model_list, list):
        w.add("model_list", "missing or not a list; no deployments")
        return []
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index, entry in enumerate(model_list):
        dep = deployment(entry, index, environ, w)
        if dep is None:
            continue
        base, n = dep["id"], 1
        while dep["id"] in seen:
            n += 1
            dep["id"] = f"{base}-{n}"
        seen.add(dep["id"])
        out.append(dep)
    # order 1 is LiteLLM's first choice: the highest tier; deployments without order come last.
    for pool in {d["model"] for d in out}:
        members = [d for d in out if d["model"] == pool and "_order" in d]
        top = max((d["_order"] for d in members), default=0)
        for dep in members:
            dep["priority"] = top + 1 - dep.pop("_order")
    return out


def _router(router: Mapping[str, Any], settings: Mapping[str, Any], w: Warnings) -> dict[str, Any]:
    out: dict[str, Any] = {}
    strategy = router.get("routing_strategy")
    if strategy is not None:
        if strategy in STRATEGIES:
            out["strategy"] = STRATEGIES[strategy]
        else:
            w.add("router_settings", f"routing_strategy {strategy!r} has no equivalent; dropped")
    circuit: dict[str, int] = {}
    for theirs, ours in _CIRCUIT:
        # LiteLLM takes these in litellm_settings too (its reliability docs put them there).
        place = "router_settings" if router.get(theirs) is not None else "litellm_settings"
        value = router.get(theirs, settings.get(theirs))
        if value is None:
            continue
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            circuit[ours] = math.ceil(value)
        else:
            w.add(place, f"{theirs}: {value!r} is not a number >= 0; dropped")
    if circuit:
        out["circuit"] = circuit
    known = _ROUTER_KEYS | set(_POLICY_KEYS) | set(FALLBACKS)
    for name in sorted(set(router) - known):
        w.add("router_settings", f"{name} has no equivalent; dropped")
    return out


def _seconds(value: Any, where: str, w: Warnings) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    w.add(where, f"{value!r} is not a positive number of seconds; dropped")
    return None


def _policies(
    router: Mapping[str, Any], settings: Mapping[str, Any], w: Warnings
) -> dict[str, Any] | None:
    """The whole matrix, when the router sets a timeout or retries (else the defaults hold)."""
    given = {k: router[k] for k in _POLICY_KEYS if router.get(k) is not None}
    for theirs, ours in _LITELLM_ALIASES.items():
        if settings.get(theirs) is None:
            continue
        if ours not in given:
            given[ours] = settings[theirs]
        elif given[ours] != settings[theirs]:
            w.add(
                f"litellm_settings.{theirs}",
                f"{settings[theirs]!r} is overridden by router_settings.{ours} {given[ours]!r}",
            )
    if not given:
        return None
    matrix = _default_matrix()
    timeout = _seconds(given["timeout"], "timeout", w) if "timeout" in given else None
    stream = given.get("stream_timeout")
    stream_s = _seconds(stream, "stream_timeout", w) if stream is not None else timeout
    retries = given.get("num_retries")
    if retries is not None and not (isinstance(retries, int) and retries >= 0):
        w.add("num_retries", f"{retries!r} is not an integer >= 0; dropped")
        retries = None
    for op in _TIMED:
        row = matrix[op.value]
        for mode, seconds in (("json", timeout), ("stream", stream_s)):
            if seconds is not None:
                row[mode]["response_ms"] = math.ceil(seconds * 1000)
                row[mode]["total_ms"] = max(row[mode]["total_ms"], row[mode]["response_ms"])
            if retries is not None:
                row[mode]["max_attempts"] = retries + 1
    return matrix


def _overrides(dep: dict[str, Any], matrix: Mapping[str, Any], w: Warnings) -> None:
    """A deployment's own timeout / stream_timeout / max_retries, where they tighten."""
    given = dep.pop("_policy", None)
    if not given:
        return
    where = dep.get("_entry") or f"deployment {dep['id']}"
    wanted: dict[str, dict[str, int]] = {"json": {}, "stream": {}}
    for name, mode in (("timeout", "json"), ("stream_timeout", "stream")):
        if name in given and (seconds := _seconds(given[name], f"{where}: {name}", w)):
            wanted[mode]["response_ms"] = math.ceil(seconds * 1000)
    if "timeout" in given and "stream_timeout" not in given and wanted["json"]:
        wanted["stream"]["response_ms"] = wanted["json"]["response_ms"]
    retries = given.get("max_retries")
    if retries is not None:
        if isinstance(retries, int) and retries >= 0:
            for mode in wanted:
                wanted[mode]["max_attempts"] = retries + 1
        else:
            w.add(where, f"max_retries: {retries!r} is not an integer >= 0; dropped")
    operations = dep.get("operations", ["chat"])  # without a mode, LiteLLM means chat
    overrides: dict[str, dict[str, dict[str, int]]] = {}
    for op in (o.value for o in _TIMED if o.value in operations):
        for mode, values in wanted.items():
            for name, value in values.items():
                limit = matrix[op][mode][name]
                if value > limit:
                    w.add(where, f"{op}.{mode}.{name} {value} is looser than {limit}; dropped")
                    continue
                overrides.setdefault(op, {}).setdefault(mode, {})[name] = value
    if overrides:
        dep["execution_policy_overrides"] = overrides


def _fallbacks(
    section: Mapping[str, Any], pools: set[str], where: str, w: Warnings
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for key, reason in FALLBACKS.items():
        value = section.get(key)
        if value is None:
            continue
        items = value if isinstance(value, list) else [value]
        for item in items:
            if not isinstance(item, Mapping):
                w.add(f"{where}.{key}", f"{item!r} is not a {{model: [fallbacks]}} mapping")
                continue
            for model, targets in item.items():
                to = [targets] if isinstance(targets, str) else list(targets or [])
                missing = [m for m in [model, *to] if m not in pools]
                if missing:
                    w.add(f"{where}.{key}", f"{model}: no deployment serves {missing}; left out")
                to = [m for m in to if m in pools]
                if model in pools and to:
                    out.append({"model": model, "reason": reason, "to": to})
    return out
