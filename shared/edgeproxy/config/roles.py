"""Caller roles, lowest to highest: ``free`` < ``pro`` < ``internal`` < ``admin``; and the owner.

A client key carries one role; a deployment may carry ``min_role`` to keep
its capacity for callers of that role and above (key reservation).

Above every key is the gateway's owner: whoever deploys it (the template's
parameters, the process environment, the state table itself, as with
``edgeproxy config load --table``) and the bootstrap admin key
(``EDGEPROXY_ADMIN_KEY_REF``). A table key with the ``admin`` role is
revocable and works inside the boundary the owner set, so a document it
writes may not change the owner's sections (``service.admin.owner_guard.owner_sections``):

- ``gateway.egress``: the hosts and ranges upstreams may reach, and the
  Bedrock endpoints SigV4 may be computed for;
- ``gateway.alerts``: where budget alerts are posted (a destination beside the
  upstreams) and the credential reference their signature is keyed by;
- ``gateway.api_keys`` entries with the ``admin`` role: admin keys are table
  keys (listed, revocable); the owner's entries are imported into the table
  and no admin entry is ever stored in the document.

The credential-reference prefixes (``config.credential_refs``) are constants
matching the template's IAM grants: no document can change them.
"""

from __future__ import annotations

from enum import StrEnum

EGRESS = "gateway.egress"
# Where budget alerts are posted, and the credential their signature is keyed by: a
# destination outside the upstreams, so the owner's like the egress rule.
ALERTS = "gateway.alerts"
ADMIN_KEYS = "gateway.api_keys"


class Role(StrEnum):
    FREE = "free"
    PRO = "pro"
    INTERNAL = "internal"
    ADMIN = "admin"

    @property
    def rank(self) -> int:
        """Position in the order (``free`` is 0)."""
        return _ORDER.index(self)

    def at_least(self, other: Role) -> bool:
        """Whether this role is ``other`` or above it."""
        return self.rank >= other.rank


_ORDER = (Role.FREE, Role.PRO, Role.INTERNAL, Role.ADMIN)
