"""The routing trace of one request: every attempt, for logs and the opt-in metadata.

Sent to the client only when it asks (``x-unified-routing-metadata: true``)
as the ``unified_routing`` object; always logged. Holds deployment ids,
classes and statuses, never URLs or credentials. ``decisions``: each
routing decision's reasons (``routing.explain``), logged compactly
(``reasons``) and in the metadata only for an admin who asks
(``x-unified-routing-reasons: true``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from edgeproxy.routing.explain.reasons import Reason, compact
from edgeproxy.routing.step import Step, Stop, Try


@dataclass(slots=True)
class AttemptRecord:
    """One upstream call (or a decision that ended without one)."""

    model: str
    deployment_id: str
    latency_ms: int
    status: int | None = None
    error_class: str | None = None
    error_kind: str | None = None
    sticky: bool = False
    probe: bool = False
    anomalies: list[str] = field(default_factory=list)  # a complete answer's irregularities
    notes: list[str] = field(default_factory=list)  # what the call left out (``cache_marks``)
    continuation: bool = False  # carried the continuation of a stream cut after its commit
    usage: dict[str, int] | None = None  # tokens this attempt reported (streams)
    # The tokens counted for it (limits, spend, the request log): what it reported, else
    # the estimate of a stream that reported none. Not in the routing metadata.
    counted: dict[str, int] | None = None
    started_at: float = 0.0  # epoch seconds (for spans; not in the metadata)

    def as_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "deployment": self.deployment_id,
            "latency_ms": self.latency_ms,
            "status": self.status,
            "error_class": self.error_class,
            "error_kind": self.error_kind,
            "sticky": self.sticky,
            "probe": self.probe,
            "anomalies": list(self.anomalies),
            "continuation": self.continuation,
            "usage": self.usage,
        }


@dataclass(slots=True)
class Trace:
    """What happened while routing one request."""

    requested_model: str
    strategy: str | None = None
    served_by: str | None = None
    served_model: str | None = None
    attempts: list[AttemptRecord] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    decisions: list[tuple[str, tuple[Reason, ...]]] = field(default_factory=list)

    def decided(self, model: str, step: Step) -> None:
        """Keep the reasons of one decision in ``model``'s pool (one per attempt or stop)."""
        if isinstance(step, Try):
            self.decisions.append((model, step.pick.reasons))
        elif isinstance(step, Stop) and step.failure.blocked is not None:
            self.decisions.append((model, step.failure.blocked.reasons))

    def reasons(self) -> str:
        """Every decision's reasons in one log field: ``model: *a:strategy#1 b:circuit(5s)``."""
        return "; ".join(f"{model}: {compact(reasons)}" for model, reasons in self.decisions)

    @property
    def fallback_used(self) -> bool:
        return self.served_model is not None and self.served_model != self.requested_model

    def metadata(self, *, reasons: bool = False) -> dict[str, Any]:
        """The ``unified_routing`` object (``reasons``: with each decision's reasons)."""
        out: dict[str, Any] = {
            "strategy": self.strategy,
            "deployment": self.served_by,
            "model": self.served_model,
            "fallback_used": self.fallback_used,
            "attempts": [a.as_dict() for a in self.attempts],
        }
        if reasons:
            out["decisions"] = [
                {"model": model, "candidates": [r.as_dict() for r in why]}
                for model, why in self.decisions
            ]
        return out
