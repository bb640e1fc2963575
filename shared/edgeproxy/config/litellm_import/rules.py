"""The entry rules applied to a converted LiteLLM config (``edgeproxy config import-litellm``).

LiteLLM configs point at self-hosted servers on private addresses and read
keys from any environment variable; edgeproxy refuses both unless stated
(``config.egress``, ``config.credential_refs``). The converter states them,
visibly: a refused literal address is added to ``gateway.egress.allow`` as
that one address, and an ``env:NAME`` key becomes ``env:EDGEPROXY_CRED_NAME``,
each with a warning saying so, so the output loads and nothing is allowed
that the operator does not see in it.
"""

from __future__ import annotations

from typing import Any

from edgeproxy.config.credential_refs import ENV_PREFIX, reference_problem
from edgeproxy.config.egress import EgressSettings, literal_address, url_host, url_problem


def state_entry_rules(document: dict[str, Any], warnings: list[str]) -> None:
    """Make ``document`` meet the entry rules by stating what it needs (in place)."""
    gateway = document.setdefault("gateway", {})
    allow: list[str] = gateway.setdefault("egress", {}).setdefault("allow", [])
    for dep in document.get("deployments", []):
        where = f"deployment {dep.get('id')}"
        credential = dep.get("credential")
        if (
            isinstance(credential, str)
            and credential.startswith("env:")
            and reference_problem(credential) is not None
        ):
            name = ENV_PREFIX + credential[len("env:") :]
            dep["credential"] = f"env:{name}"
            warnings.append(f"{where}: credential {credential} became env:{name}: export it so")
        url = dep.get("base_url")
        host = url_host(url) if isinstance(url, str) else None
        address = literal_address(host) if host else None
        if address is None or url_problem(str(url), EgressSettings(allow=allow)) is None:
            continue
        allow.append(str(address))
        warnings.append(f"{where}: base_url {address} is not public; added to gateway.egress.allow")
    if not allow:
        del gateway["egress"]
    if not gateway:
        del document["gateway"]
