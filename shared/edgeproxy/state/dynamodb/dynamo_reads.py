"""The pool reads of ``DynamoStore``: one routing decision's items, alone or batched.

Consistency: ``read_pool`` is the one read on every request. A read that
carries a sticky binding is *strongly consistent*: the binding a success
earns is written before its answer is released, so the caller's next turn,
sent the instant the answer arrived and read on any process, must see it
(an eventually consistent read may answer without a write of the last
second or so, and an agent's next turn comes sooner than that). A read
without a binding (stickiness off) is *eventually consistent*, half the read
units. For the other items a stale read
cannot break a transition, because every transition decided on it is a
conditional write that checks the stored item, not the read: a circuit's
(``write_circuit``, on its version: a stale read loses and gets the winner,
so a half-open probe still has one owner), a binding's (``put_binding``, on
deployment and version, or absence), admission (``admit``/``admit_key``, the
rpm/tpm condition on the counter itself), a throttle (``extend_capacity``,
only ever longer) and a quota reading (``put_quota``, only newer). What a
stale read can do is route one request on state a second old: one more
attempt on a deployment whose circuit just opened, a count that misses the
last requests (ordering only; limits are exact at admission), a key's spend
or a pool's invalidation seen up to that much later. The reads whose answer
is acted on without such a condition stay strongly consistent: the
configuration (``load_config``), client keys, and the jobs' and the admin
plane's own reads (the admin views built on ``read_pool``, deep health and a
binding's lookup, share its consistency).

``read_pool`` asks only for the items its request names: ``SnapshotRequest.of``
leaves out the usage buckets the pool's strategies and limits never look at,
and the pool item (its generation) unless a binding is read.
"""

from __future__ import annotations

from collections.abc import Sequence

from edgeproxy.routing.snapshot import PoolSnapshot
from edgeproxy.state.counter_shards import ShardCounts
from edgeproxy.state.dynamodb import pool_read
from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy.state.dynamodb.table import Table
from edgeproxy.state.store import SnapshotRequest


class DynamoReads:
    """``PoolSource`` and ``PoolBatches``: ``read_pool(s)`` (mixed into ``DynamoStore``)."""

    _table: Table
    _schema: TableSchema
    _shards: ShardCounts

    async def read_pool(self, request: SnapshotRequest) -> PoolSnapshot:
        """Circuits, the usage buckets asked for, health, capacity, binding, generation, quotas."""
        return (await self.read_pools([request]))[0]

    async def read_pools(self, requests: Sequence[SnapshotRequest]) -> list[PoolSnapshot]:
        """Several requests' snapshots from one read of their keys (strongly consistent when
        one of them reads a binding, eventually consistent otherwise: see the module)."""
        for request in requests:  # what a later outcome write of these deployments spreads over
            for deployment_id in request.deployment_ids:
                self._shards.note(deployment_id, request.shards_of(deployment_id))
        found = await self._table.batch_get(
            (k for r in requests for k in pool_read.wanted(r)),
            consistent=any(r.binding is not None for r in requests),
        )
        return [pool_read.snapshot(r, found, self._schema) for r in requests]
