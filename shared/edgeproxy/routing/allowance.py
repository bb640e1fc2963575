"""A limit split over N counter shards: each shard's allowance, and the probe order.

A deployment with ``counter_shards: N`` keeps N usage items per minute
bucket. Admission stays a conditional write on one item, so a shard may
only admit while *its own* count is under its allowance. The allowances
split the limit exactly (``sum(allowance(L, N, s) for s in range(N)) == L``),
so no number of concurrent writers can admit more than ``L`` in total:

* **over-admission: none.** Each shard's condition holds at its write, and
  the allowances sum to the limit.
* **rpm under-admission: none.** An admission tries its start shard, then
  borrows from each other shard in turn (``probe_order``: at most N - 1
  borrows). ``requests`` only grows within a minute, so a shard seen full
  stays full: a refusal means every shard was full, i.e. ``L`` admitted.
* **tpm under-admission: at most (N - 1) * (reserve - 1) tokens** more than
  one unsharded item would refuse. Reservations shrink when an answer is
  reconciled, and room left on the shards can be split so that no one
  shard fits a reservation while their sum would.

The price: an admission costs one conditional write while its start shard
has room and up to N once shards run dry (a failed condition is charged
like a write), which happens only in the race at the end of a minute's
allowance (routing refuses a deployment at its summed limit before
admitting).
"""

from __future__ import annotations


def allowance(limit: int, shards: int, shard: int) -> int:
    """Shard ``shard``'s part of ``limit``: an even split, the remainder to the first shards."""
    if shards < 1 or not 0 <= shard < shards:
        raise ValueError(f"shard {shard} of {shards}")
    base, extra = divmod(max(0, limit), shards)
    return base + (1 if shard < extra else 0)


def probe_order(shards: int, start: int) -> list[int]:
    """Every shard once, from ``start`` on (wrapping): the start shard, then the borrows."""
    if shards < 1 or not 0 <= start < shards:
        raise ValueError(f"shard {start} of {shards}")
    return [(start + i) % shards for i in range(shards)]
