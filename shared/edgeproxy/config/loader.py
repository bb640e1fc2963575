"""Load and validate a configuration file (YAML) into a ``GatewayConfig``.

Errors name the file and the dotted path of the offending key, so a typo such
as ``wieght`` reads ``config.yaml: deployments[1].wieght: extra inputs are not
permitted`` rather than a stack trace.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from edgeproxy.config.entry_rules import entry_problems
from edgeproxy.config.legacy_policies import without_legacy_deadlines
from edgeproxy.config.models import GatewayConfig
from edgeproxy.config.policies import default_execution_policies
from edgeproxy.errors import ConfigError, EntryRefused


def location(loc: tuple[int | str, ...]) -> str:
    """A validation error's location as a dotted path (``deployments[1].weight``)."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def parse_config(data: Any, source: str, *, entry: bool = True) -> GatewayConfig:
    """Validate a parsed document; ``source`` names it in error messages.

    ``entry``: also apply the egress and credential rules (every document
    that comes in; not one read back from the table, ``from_document``).
    """
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping")
    try:
        config = GatewayConfig.model_validate(data)
    except ValidationError as exc:
        lines = [
            f"{source}: {location(err['loc'])}: {err['msg'][0].lower()}{err['msg'][1:]}"
            for err in exc.errors(include_url=False, include_input=False)
        ]
        raise ConfigError("\n".join(lines)) from None
    problems = entry_problems(config) if entry else []
    if problems:
        text = "\n".join(f"{source}: {problem}" for problem in problems)
        raise EntryRefused(text, problems[0].field)
    return config


# Sections a file may carry that become table items (``service/admin/config_teams.py``).
TABLE_SECTIONS = ("organizations", "teams")


def load_config_file(path: str | Path) -> GatewayConfig:
    """Read and validate a YAML configuration file.

    >>> load_config_file("infra/config.example.yaml").public_models()  # doctest: +SKIP
    ['demo-failover', 'fast-chat', 'text-embed']
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    import yaml  # files only: the stored configuration is JSON (cold start)

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if isinstance(data, dict):
        # Table items, not configuration: ``config load`` checks and writes them.
        data = {k: v for k, v in data.items() if k not in TABLE_SECTIONS}
    return parse_config(data, str(path))


def to_document(config: GatewayConfig) -> str:
    """Serialize for storage in the table (JSON; round-trips through ``from_document``)."""
    return config.model_dump_json(by_alias=True, exclude_defaults=False)


def from_document(document: str, source: str = "stored configuration") -> GatewayConfig:
    """Parse a stored document (one stored by an older release too: ``with_new_operations``,
    ``legacy_policies``)."""
    try:
        data = json.loads(document)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{source}: not valid JSON: {exc}") from None
    return parse_config(with_new_operations(without_legacy_deadlines(data)), source, entry=False)


def with_new_operations(data: Any) -> Any:
    """A stored document with the default policy rows of operations added since it was stored.

    ``to_document`` writes the whole deadline matrix, so every stored
    configuration lists the operations of the release that stored it; one
    that adds an operation must still read them. Files and admin writes are
    not completed: they must list every operation (the matrix is exhaustive).
    """
    router = data.get("router") if isinstance(data, dict) else None
    if not isinstance(router, dict) or not isinstance(router.get("execution_policies"), dict):
        return data
    matrix: dict[str, Any] = router["execution_policies"]
    missing = {
        op.value: policy.model_dump(by_alias=True)
        for op, policy in default_execution_policies().items()
        if op.value not in matrix
    }
    if not missing:
        return data
    return {**data, "router": {**router, "execution_policies": {**matrix, **missing}}}
