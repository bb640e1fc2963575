"""What one ranking did, noted by the ranking code itself as it ran.

A ``Notes`` travels in ``StrategyInputs`` to the rankers; the rank helpers
(``ranked``, ``two_choices``, ``hash_affinity``) put down the number each
candidate was ordered by and when power-of-two-choices swapped a draw, and
``selection`` puts down each group it asked a strategy to order. Nothing
reads a note back while ranking: the notes only feed the reasons
(``routing.explain.reasons``), so the explanation is the ranking's own
record, not a second computation of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from edgeproxy.config.deployment import Deployment


@dataclass(frozen=True, slots=True)
class Group:
    """One group a strategy ordered: ``members`` in, ``ordered`` out (best first)."""

    tier: int
    strategy: str
    members: tuple[str, ...]
    ordered: tuple[str, ...]


@dataclass(slots=True)
class Notes:
    """Per decision: the strategy's score of each candidate, swaps and the groups ordered.

    ``scores``: the metric a candidate was ranked by (lower first, as ranked
    sorts; the throughput and health strategies rank by its negative).
    ``remarks``: a word on a candidate (no metric value yet; p2c swapped it).
    """

    scores: dict[str, float] = field(default_factory=dict)
    remarks: dict[str, str] = field(default_factory=dict)
    groups: list[Group] = field(default_factory=list)

    def score(self, deployment_id: str, value: float) -> None:
        self.scores[deployment_id] = value

    def metric(
        self, known: Sequence[tuple[float, Deployment]], unknown: Sequence[Deployment]
    ) -> None:
        """A metric strategy's values (``known``) and the candidates without one."""
        for value, dep in known:
            self.scores[dep.id] = value
        for dep in unknown:
            self.remarks[dep.id] = "no metric value yet"

    def remark(self, deployment_id: str, text: str) -> None:
        self.remarks[deployment_id] = text

    def ordered(self, group: Group) -> None:
        self.groups.append(group)
