"""Each deployment's prompt-token calibration, as this process has observed it.

``routing.calibration`` is the rule; this keeps its values in process, one
per deployment id, learned from the prompt counts upstreams report with
their answers. A new process starts uncalibrated (ratio 1: the estimate
alone, which is conservative on its own); nothing is written to the store,
so learning costs no round trip. Any estimate that needs a deployment's
real counts (the key reservations here; the router's context windows,
``routing.estimates.window``) reads it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from edgeproxy.config.deployment import Deployment
from edgeproxy.routing.estimates.calibration import Calibration, highest, observed
from edgeproxy.routing.estimates.tokens import prompt_bound


class Calibrations:
    """Per-deployment calibrations of the prompt estimate."""

    def __init__(self) -> None:
        self._by_deployment: dict[str, Calibration] = {}

    def observe(self, deployment_id: str, body: Mapping[str, Any], reported: int) -> None:
        """Learn from one answer: ``reported`` prompt tokens for request ``body``."""
        current = self.of(deployment_id)
        self._by_deployment[deployment_id] = observed(current, prompt_bound(body), reported)

    def of(self, deployment_id: str) -> Calibration:
        """The deployment's calibration (uncalibrated until its first counted answer)."""
        return self._by_deployment.get(deployment_id, Calibration())

    def view(self) -> Mapping[str, Calibration]:
        """Every calibration learned so far, by deployment id (read-only, kept current)."""
        return MappingProxyType(self._by_deployment)

    def ratio(self, pool: Iterable[Deployment]) -> float:
        """The highest ratio among ``pool``'s deployments (1 when none is calibrated)."""
        return highest(self.of(d.id) for d in pool)
