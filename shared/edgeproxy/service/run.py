"""One request's routing state, the attempt that answered it, and the answer the surface sends."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from edgeproxy.config.models import GatewayConfig
from edgeproxy.routing.deadlines import Budget
from edgeproxy.routing.estimates.calibration import Calibration
from edgeproxy.service.admission import Attempt
from edgeproxy.service.attempts import Answer
from edgeproxy.service.pool import PoolContext
from edgeproxy.service.request import ProxyRequest
from edgeproxy.service.stream.events import StreamItem
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
    ``calibrated``: each deployment's prompt calibration for the request's protocol,
    by id, that context windows and a stream's unreported usage count the prompt by
    (``service.limits.calibrations``).
    """

    req: ProxyRequest
    config: GatewayConfig
    budget: Budget
    trace: Trace
    owner: str
    resume: bool = False
    calibrated: Mapping[str, Calibration] = field(default_factory=dict)


@dataclass(slots=True)
class JsonAnswer:
    """The answer, the headers to send with it (the upstream's passed-on ones, by their own
    names: the surface renames them), and the outcome writes to await after it was sent
    (under way already; the binding's landed before the answer was returned)."""

    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    after: Callable[[], Awaitable[None]] | None = None


@dataclass(slots=True)
class StreamAnswer:
    """As ``JsonAnswer``, for a stream: the headers are the committed attempt's."""

    body: AsyncIterator[StreamItem]
    headers: dict[str, str] = field(default_factory=dict)
    after: Callable[[], Awaitable[None]] | None = None
