"""``SnapshotRequest``: what one routing decision reads from the store, and no more.

Re-exported by ``state.store`` (the protocol's home), where callers import it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.router import Strategy
from edgeproxy.routing.snapshot import BindingKey, credential_key


@dataclass(frozen=True, slots=True)
class SnapshotRequest:
    """What to read for one routing decision.

    ``usage_ids``: deployments whose current minute bucket is read (None: every
    deployment); ``previous_minute``: also the bucket before (in-flight counts
    sum both). ``SnapshotRequest.of`` narrows both to what the pool's
    strategies and limits use; the defaults read everything (the admin views).
    """

    pool: str
    deployment_ids: Sequence[str]
    domains: Sequence[str]
    minute: int
    binding: BindingKey | None = None
    credentials: Sequence[str] = ()  # credential keys whose quota routing checks
    usage_ids: Sequence[str] | None = None
    previous_minute: bool = True
    shards: tuple[tuple[str, int], ...] = ()  # (deployment, counter_shards) where more than 1
    slots: tuple[tuple[str, int], ...] = ()  # (deployment, max_parallel_requests) where capped

    def shards_of(self, deployment_id: str) -> int:
        """How many usage items one minute bucket of ``deployment_id`` has."""
        return dict(self.shards).get(deployment_id, 1)

    @classmethod
    def of(
        cls,
        pool: str,
        deployments: Sequence[Deployment],
        now: float,
        binding: BindingKey | None = None,
        counting: Collection[Strategy] | None = None,
    ) -> SnapshotRequest:
        """The read for routing ``deployments`` of ``pool`` at ``now`` (its minute bucket).

        ``counting``: the strategies of this pool's tiers that read usage
        counters, as the caller judged them with their parameters
        (``reads_counters``). Empty: only the deployments with an rpm or tpm
        limit have their current bucket read (eligibility checks it), and no
        previous bucket is read; None reads every bucket (the safe default).
        """
        counted = counting is None or bool(counting)
        limited = [d.id for d in deployments if d.rpm_limit is not None or d.tpm_limit is not None]
        return cls(
            pool=pool,
            deployment_ids=[d.id for d in deployments],
            domains=sorted({d.domain for d in deployments}),
            minute=int(now // 60),
            binding=binding,
            credentials=sorted({credential_key(d.credential) for d in deployments if d.credential}),
            usage_ids=None if counted else limited,
            previous_minute=counted,
            shards=tuple((d.id, d.counter_shards) for d in deployments if d.counter_shards > 1),
            slots=tuple(
                (d.id, d.max_parallel_requests)
                for d in deployments
                if d.max_parallel_requests is not None
            ),
        )
