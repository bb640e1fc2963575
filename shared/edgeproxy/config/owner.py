"""What only the gateway's owner may change: the boundary an admin key works inside.

The owner is whoever deploys the gateway: the template's parameters, the
process environment, the state table itself (``edgeproxy config load
--table``) and the bootstrap admin key (``EDGEPROXY_ADMIN_KEY_REF``). A table
key with the ``admin`` role is revocable and works inside the boundary, so a
document it writes may not change:

- ``gateway.egress``: the hosts and ranges upstreams may reach, and the
  Bedrock VPC endpoints SigV4 may be computed for;
- ``gateway.api_keys`` entries with the ``admin`` role (admin keys are table
  keys: the owner's entries are imported into the table, and no admin entry
  is ever stored in the document).

The credential-reference prefixes (``config.credential_refs``) are constants
matching the template's IAM grants: no document can change them.
"""

from __future__ import annotations

from edgeproxy.config.models import ApiKey, GatewayConfig
from edgeproxy.config.roles import Role

EGRESS = "gateway.egress"
ADMIN_KEYS = "gateway.api_keys"


def admin_entries(config: GatewayConfig) -> list[ApiKey]:
    """The ``gateway.api_keys`` entries that would grant the admin role."""
    return [key for key in config.gateway.api_keys if key.effective_role is Role.ADMIN]


def owner_sections(
    before: GatewayConfig | None, after: GatewayConfig, imported: frozenset[str] = frozenset()
) -> list[str]:
    """The owner's sections that ``after`` changes against ``before`` (None: nothing stored).

    ``imported``: digests that already are admin keys of the table. An admin
    entry is a change unless it is one of those or already in ``before``, so
    re-sending the file that seeded the gateway is not one (its entries grant
    nothing that is not listed and revocable already).
    """
    old = before if before is not None else GatewayConfig()
    out: list[str] = []
    if old.gateway.egress != after.gateway.egress:
        out.append(EGRESS)
    known = imported | {key.sha256 for key in admin_entries(old)}
    if any(key.sha256 not in known for key in admin_entries(after)):
        out.append(ADMIN_KEYS)
    return out
