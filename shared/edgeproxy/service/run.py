"""One request's routing state, and the attempt that answered it."""

from __future__ import annotations

from dataclasses import dataclass

from edgeproxy.config.models import GatewayConfig
from edgeproxy.routing.deadlines import Budget
from edgeproxy.service.admission import Attempt
from edgeproxy.service.attempts import Answer
from edgeproxy.service.pool import PoolContext
from edgeproxy.service.request import ProxyRequest
from edgeproxy.service.trace import AttemptRecord, Trace


@dataclass(slots=True)
class Served:
    """The attempt that answered, with what its outcome write needs."""

    answer: Answer
    ctx: PoolContext
    attempt: Attempt
    model: str
    counted: bool = False  # this request already counted a failure of this deployment
    record: AttemptRecord | None = None  # its entry in the routing trace


@dataclass(slots=True)
class Run:
    """One request's routing state across pools.

    ``resume``: this run carries the continuation of a stream cut after its
    commit (its body ends with the assistant prefill); only deployments with
    ``supports_prefill`` are candidates and no sticky binding is read or moved.
    """

    req: ProxyRequest
    config: GatewayConfig
    budget: Budget
    trace: Trace
    owner: str
    resume: bool = False
