"""Load and validate a configuration file (YAML) into a ``GatewayConfig``.

Errors name the file and the dotted path of the offending key, so a typo such
as ``wieght`` reads ``config.yaml: deployments[1].wieght: extra inputs are not
permitted`` rather than a stack trace.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from edgeproxy.config.models import GatewayConfig
from edgeproxy.errors import ConfigError


def location(loc: tuple[int | str, ...]) -> str:
    """A validation error's location as a dotted path (``deployments[1].weight``)."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def parse_config(data: Any, source: str) -> GatewayConfig:
    """Validate a parsed document; ``source`` names it in error messages."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping")
    try:
        return GatewayConfig.model_validate(data)
    except ValidationError as exc:
        lines = [
            f"{source}: {location(err['loc'])}: {err['msg'][0].lower()}{err['msg'][1:]}"
            for err in exc.errors(include_url=False, include_input=False)
        ]
        raise ConfigError("\n".join(lines)) from None


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
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    return parse_config(data, str(path))


def to_document(config: GatewayConfig) -> str:
    """Serialize for storage in the table (JSON; round-trips through ``from_document``)."""
    return config.model_dump_json(by_alias=True, exclude_defaults=False)


def from_document(document: str, source: str = "stored configuration") -> GatewayConfig:
    """Parse a stored document."""
    try:
        data = json.loads(document)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{source}: not valid JSON: {exc}") from None
    return parse_config(data, source)
