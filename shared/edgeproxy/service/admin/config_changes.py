"""The changes the admin API makes to the configuration document (plain JSON edits).

Each function returns a ``Change`` for ``ConfigEditor.edit``: it edits the
document in place and raises ``NotFound`` for an unknown id; everything
else (types, ranges, cross-references) is checked afterwards by the same
validation as a YAML file.
"""

from __future__ import annotations

from typing import Any

from edgeproxy.config.cache import CacheRule
from edgeproxy.config.presets import Preset, without_preset
from edgeproxy.config.router import RouterSettings
from edgeproxy.errors import AlreadyExists, NotFound, RequestError
from edgeproxy.service.admin.config_edit import Change, Document, checked

# Sent whole by design (000): a new operation cannot ship without an explicit policy.
WHOLE = frozenset({"execution_policies"})


def merged(current: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """``current`` with ``patch`` applied: omitted keys keep their value, objects merge deeply.

    >>> merged({"circuit": {"a": 1, "b": 2}}, {"circuit": {"b": 3}})
    {'circuit': {'a': 1, 'b': 3}}
    """
    out = dict(current)
    for name, value in patch.items():
        old = out.get(name)
        if name not in WHOLE and isinstance(old, dict) and isinstance(value, dict):
            out[name] = merged(old, value)
        else:
            out[name] = value
    return out


def router_settings(patch: dict[str, Any]) -> Change:
    """Partial update of ``router:`` (``PUT /admin/router-settings``).

    The patch itself is validated first (every field of ``RouterSettings``
    has a default, so a partial body is a valid one), so errors name the
    patch's own paths; the merged document is validated again as a whole.
    A patch that changes ``preset`` resets the settings presets set to the new
    preset's, except those the patch sets itself.
    """
    checked(RouterSettings, patch)

    def change(doc: Document) -> None:
        current = doc.get("router", {})
        if "preset" in patch and patch["preset"] != current.get("preset", Preset.PATIENT):
            current = without_preset(current)
        doc["router"] = merged(current, patch)

    return change


def _index(doc: Document, deployment_id: str) -> int:
    for i, dep in enumerate(doc.get("deployments", [])):
        if dep.get("id") == deployment_id:
            return i
    raise NotFound(f"No deployment `{deployment_id}`.", param="id")


def create_deployment(body: dict[str, Any]) -> Change:
    """Add a deployment; its id must be new."""

    def change(doc: Document) -> None:
        dep_id = body.get("id")
        if any(d.get("id") == dep_id for d in doc.get("deployments", [])):
            raise AlreadyExists(f"A deployment `{dep_id}` already exists.", param="id")
        doc.setdefault("deployments", []).append(body)

    return change


def replace_deployment(deployment_id: str, body: dict[str, Any], *, partial: bool) -> Change:
    """Replace (PUT) or partially update (PATCH) one deployment; the id cannot change."""
    if body.get("id", deployment_id) != deployment_id:
        raise RequestError("The body's `id` differs from the path; ids cannot change.", param="id")

    def change(doc: Document) -> None:
        i = _index(doc, deployment_id)
        base = doc["deployments"][i] if partial else {}
        doc["deployments"][i] = {**base, **body, "id": deployment_id}

    return change


def delete_deployment(deployment_id: str) -> Change:
    """Remove one deployment (refused if a pool setting or fallback still needs its pool)."""

    def change(doc: Document) -> None:
        del doc["deployments"][_index(doc, deployment_id)]

    return change


def _pools(doc: Document) -> set[str]:
    return {
        f"{d['model']}:{d['group']}" if d.get("group") else d["model"] for d in doc["deployments"]
    }


def put_pool(pool: str, body: dict[str, Any]) -> Change:
    """Set one pool's overrides (strategy, tier strategies, sticky), replacing the old ones."""

    def change(doc: Document) -> None:
        if pool not in _pools(doc):
            raise NotFound(f"No deployment serves the pool `{pool}`.", param="model")
        doc.setdefault("pools", {})[pool] = body

    return change


def delete_pool(pool: str) -> Change:
    """Drop one pool's overrides (it follows the router settings again)."""

    def change(doc: Document) -> None:
        if pool not in doc.get("pools", {}):
            raise NotFound(f"The pool `{pool}` has no settings.", param="model")
        del doc["pools"][pool]

    return change


KEEP = object()  # ``put_fallback``'s continuation when the write does not name one


def put_fallback(reason: str, model: str, to: Any, continuation: Any = KEEP) -> Change:
    """Create or replace the fallback chain of ``model`` for ``reason``; a replaced chain keeps
    its ``continuation`` unless the write names one (``None``: the router's)."""

    def change(doc: Document) -> None:
        chains = doc.setdefault("fallbacks", [])
        chain: dict[str, Any] = {"model": model, "reason": reason, "to": to}
        if continuation is not KEEP and continuation is not None:
            chain["continuation"] = continuation
        for i, old in enumerate(chains):
            if old.get("model") == model and old.get("reason") == reason:
                if continuation is KEEP and "continuation" in old:
                    chain["continuation"] = old["continuation"]
                chains[i] = chain
                return
        chains.append(chain)

    return change


def delete_fallback(reason: str, model: str) -> Change:
    """Remove the fallback chain of ``model`` for ``reason``."""

    def change(doc: Document) -> None:
        chains = doc.get("fallbacks", [])
        kept = [c for c in chains if (c.get("model"), c.get("reason")) != (model, reason)]
        if len(kept) == len(chains):
            raise NotFound(f"No `{reason}` fallback chain for `{model}`.", param="model")
        doc["fallbacks"] = kept

    return change


def put_cache_rule(level: str, name: str, body: dict[str, Any]) -> Change:
    """Set the response cache's rule of one pool, team or key (``cache.<level>.<name>``)."""
    checked(CacheRule, body)

    def change(doc: Document) -> None:
        section = doc.setdefault("cache", {})
        section.setdefault(level, {})[name] = body

    return change


def delete_cache_rule(level: str, name: str) -> Change:
    """Drop one rule of the response cache."""

    def change(doc: Document) -> None:
        rules = (doc.get("cache") or {}).get(level, {})
        if name not in rules:
            raise NotFound(f"No cache rule for {level} `{name}`.", param="name")
        del rules[name]

    return change
