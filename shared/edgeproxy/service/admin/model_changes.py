"""Admin changes of the ``models:`` (003's model levels) and ``aliases:`` sections.

Each returns a ``Change`` for ``ConfigEditor.edit``: it mutates the JSON
document, and the editor validates the result with the YAML rules (an alias
that shadows a model, names an unknown one or chains to another alias is
refused there, as at load).
"""

from __future__ import annotations

from typing import Any

from edgeproxy.errors import NotFound
from edgeproxy.service.admin.config_edit import Change, Document


def _models(doc: Document) -> set[str]:
    return {d["model"] for d in doc.get("deployments", [])}


def _canonical(doc: Document, name: str) -> str:
    """An alias names its model's settings (001: the alias and its model share one set)."""
    alias = doc.get("aliases", {}).get(name)
    return str(alias["model"]) if isinstance(alias, dict) and "model" in alias else name


def put_model_rules(name: str, body: dict[str, Any]) -> Change:
    """Set one model's levels (default, protocol rules, capability rules), replacing them."""

    def change(doc: Document) -> None:
        model = _canonical(doc, name)
        if model not in _models(doc):
            raise NotFound(f"No deployment serves the model `{model}`.", param="model")
        doc.setdefault("models", {})[model] = body

    return change


def delete_model_rules(name: str) -> Change:
    """Drop one model's levels (its pools follow the global settings again)."""

    def change(doc: Document) -> None:
        model = _canonical(doc, name)
        if model not in doc.get("models", {}):
            raise NotFound(f"The model `{model}` has no settings.", param="model")
        del doc["models"][model]

    return change


def put_alias(name: str, body: dict[str, Any]) -> Change:
    """Create or replace one alias."""

    def change(doc: Document) -> None:
        doc.setdefault("aliases", {})[name] = body

    return change


def delete_alias(name: str) -> Change:
    """Remove one alias."""

    def change(doc: Document) -> None:
        if name not in doc.get("aliases", {}):
            raise NotFound(f"No alias `{name}`.", param="alias")
        del doc["aliases"][name]

    return change
