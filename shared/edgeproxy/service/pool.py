"""One pool as one request sees it: read once, then changed only by the router.

The outcome writer never touches a ``PoolContext``: each write returns a
``Standing`` (what the store holds now, the race's winner included) and the
router, which owns the request's view of the pool, applies it. The rest of
the request then routes on its own writes without another read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.policies import Deadline
from edgeproxy.config.router import CircuitSettings, StickySettings
from edgeproxy.routing.snapshot import BindingKey, Capacity, Circuit, PoolSnapshot


@dataclass(frozen=True, slots=True)
class Standing:
    """What stands in the store after one outcome write.

    ``circuits`` and ``capacities``: the items as written (or as the winner
    of a lost race left them). ``binding_dropped``: the caller's binding was
    deleted.
    """

    circuits: tuple[Circuit, ...] = ()
    capacities: tuple[Capacity, ...] = ()
    binding_dropped: bool = False

    def __add__(self, other: Standing) -> Standing:
        return Standing(
            self.circuits + other.circuits,
            self.capacities + other.capacities,
            self.binding_dropped or other.binding_dropped,
        )


NOTHING = Standing()


@dataclass(frozen=True, slots=True)
class PoolContext:
    """One pool's deployments, settings and state as this request knows it."""

    model: str
    deployments: list[Deployment]
    snapshot: PoolSnapshot
    binding_key: BindingKey | None
    sticky: StickySettings
    circuit: CircuitSettings
    limits: Mapping[str, Deadline] = field(default_factory=dict)  # each deployment's policy

    def applied(self, standing: Standing) -> PoolContext:
        """This view with ``standing`` applied to its snapshot."""
        if standing == NOTHING:
            return self
        snapshot = self.snapshot
        snapshot = replace(
            snapshot,
            circuits={**snapshot.circuits, **{c.deployment_id: c for c in standing.circuits}},
            capacities={**snapshot.capacities, **{c.domain: c for c in standing.capacities}},
            binding=None if standing.binding_dropped else snapshot.binding,
        )
        return replace(self, snapshot=snapshot)
