"""The rules a configuration must meet where it enters: the egress and credential rules,
and the hosts bedrock deployments may sign for (``config.bedrock_endpoints``).

They are checked for every document that comes in (a YAML file at startup
or by ``config load``, an admin write, the LiteLLM importer's output), not
for the document read back from the table: one stored by a release without
these rules still loads, and the connect-time egress check and the
resolver's credential check still refuse its offending deployments.
"""

from __future__ import annotations

from dataclasses import dataclass

from edgeproxy.config.bedrock_endpoints import endpoint_problem
from edgeproxy.config.credential_refs import reference_problem
from edgeproxy.config.egress import url_problem
from edgeproxy.config.models import GatewayConfig
from edgeproxy.config.providers import ProviderKind


@dataclass(frozen=True, slots=True)
class Problem:
    """One refused value: its dotted path, the field's own name, and why."""

    path: str
    field: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


def entry_problems(config: GatewayConfig) -> list[Problem]:
    """Every refused upstream URL and credential reference of ``config``."""
    out: list[Problem] = []
    allow = config.gateway.egress
    for index, dep in enumerate(config.deployments):
        where = f"deployments[{index}]"
        if dep.base_url is not None:
            reason = url_problem(dep.base_url, allow)
            if reason is None and dep.provider is ProviderKind.BEDROCK:
                reason = endpoint_problem(dep.base_url, allow.bedrock_endpoints)
            if reason is not None:
                out.append(Problem(f"{where}.base_url", "base_url", reason))
        if dep.credential is not None:
            reason = reference_problem(dep.credential)
            if reason is not None:
                out.append(Problem(f"{where}.credential", "credential", reason))
    for index, source in enumerate(config.quota_sources):
        reason = reference_problem(source.credential)
        if reason is not None:
            out.append(Problem(f"quota_sources[{index}].credential", "credential", reason))
    return out
