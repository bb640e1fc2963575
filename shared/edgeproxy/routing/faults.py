"""What went wrong with one attempt, as plain data the core can classify.

The upstream client turns every foreign error (httpx exceptions, HTTP error
answers, bad SSE) into a ``Fault``; ``routing.failures.classify`` decides
what it means for routing (a ``FailureClass``). ``Fault`` and ``FaultKind``
are drawn in ``edgeproxy.errors``, beside ``UpstreamFault`` which carries
them, so that leaf imports no room; they are re-exported here for the core.
"""

from __future__ import annotations

from enum import StrEnum

from edgeproxy.errors import Fault as Fault
from edgeproxy.errors import FaultKind as FaultKind


class FailureClass(StrEnum):
    """Failure classes by effect (primary spec, "What counts as complete")."""

    REQUEST = "request"  # 400-class: end now with the provider's answer; health-neutral
    THROTTLE = "throttle"  # 429: open the failure domain's capacity circuit
    TRANSIENT = "transient"  # retry elsewhere; counts once toward the circuit
    CONFIGURATION = "configuration"  # bad credentials/access/model: quarantine
    GATEWAY = "gateway"  # our own fault: neutral
    INCOMPATIBLE = "incompatible"  # candidate cannot serve it: neutral, try another
