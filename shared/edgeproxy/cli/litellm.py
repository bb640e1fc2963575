"""``edgeproxy config import-litellm config.yaml > edgeproxy.yaml``: convert a LiteLLM config.

The converted configuration goes to standard output as YAML; every setting
that could not be mapped goes to standard error as a ``warning:`` line, every
entry that could not be converted as an ``error:`` line (each naming the
entry as written: ``model_list[3] (model_name: gpt-4, model: azure/x)``),
followed by a summary. The output is checked with the configuration loader before it is
written (deployments of provider kinds this release does not know yet are
left out of that check, and named in a warning). ``os.environ/NAME`` values
that are not secrets (``api_base``, ``api_version``, ``aws_region_name``)
are read from this process's environment; keys stay references
(``env:NAME``).

Exit status: 0 converted (the other entries too, when some could not be),
1 ``--strict`` and there was a warning or an error (nothing is written to
standard output then), 2 the file is unreadable, not a LiteLLM config, or
converts to a configuration that does not load.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

import yaml
from pydantic import ValidationError

from edgeproxy.config.litellm_import.checks import name_entries
from edgeproxy.config.litellm_import.router import convert
from edgeproxy.config.loader import TABLE_SECTIONS, parse_config
from edgeproxy.errors import ConfigError, UsageError
from edgeproxy.service.admin.team_bodies import CreateOrganization, CreateTeam

HEADER = "# edgeproxy configuration converted from {source} by `edgeproxy config import-litellm`\n"


def read(path: str) -> Mapping[str, Any]:
    """The LiteLLM document at ``path``; ``UsageError`` if it cannot be one."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise UsageError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict) or "model_list" not in data:
        raise UsageError(f"{path}: not a LiteLLM config (no model_list)")
    return data


def checked_teams(document: Mapping[str, Any]) -> None:
    """The converted ``organizations`` and ``teams`` as the admin API would take them."""
    for section, body in (("organizations", CreateOrganization), ("teams", CreateTeam)):
        for i, entry in enumerate(document.get(section, [])):
            try:
                body.model_validate(entry)
            except ValidationError as exc:
                raise ConfigError(f"{section}[{i}]: {exc.errors()[0]['msg']}") from None


def import_litellm(
    path: str, out: TextIO, err: TextIO, environ: Mapping[str, str], *, strict: bool = False
) -> int:
    """Convert ``path``; the YAML to ``out``, the warnings, errors and a summary to ``err``."""
    converted = convert(read(path), environ)
    document = converted.document
    try:
        # Organizations and teams are table items (``config load`` writes them), checked
        # as the admin API's bodies are.
        checked_teams(document)
        routing = {k: v for k, v in document.items() if k not in TABLE_SECTIONS}
        parse_config(routing, f"{path} (converted)")
    except ConfigError as exc:
        raise ConfigError(name_entries(str(exc), converted.origins)) from None
    for line in converted.warnings:
        err.write(f"warning: {line}\n")
    for line in converted.errors:
        err.write(f"error: {line}\n")
    models = len({d["model"] for d in document["deployments"]})
    teams = f", {len(document['teams'])} teams" if document.get("teams") else ""
    err.write(
        f"converted {len(document['deployments'])} deployments ({models} models), "
        f"{len(document.get('fallbacks', []))} fallback chains{teams}; "
        f"{len(converted.warnings)} warnings, {len(converted.errors)} entries not converted\n"
    )
    if strict and (converted.warnings or converted.errors):
        err.write("--strict: not written (every warning and error above must be resolved)\n")
        return 1
    out.write(HEADER.format(source=path))
    out.write(yaml.safe_dump(document, sort_keys=False, allow_unicode=True))
    return 0
