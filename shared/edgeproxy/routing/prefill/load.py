"""Prefill-aware choice (``reference/001``): uncached prompt tokens in prefill as the load.

A request counts one whatever its size, but a large uncached prompt holds a
replica for minutes while a small one takes milliseconds. Here the load of a
deployment is the uncached prompt tokens it is prefilling now (a lease taken
at the start of an attempt and given back at its first token: a long, cheap
decode is no prefill pressure), and the number of large requests among them.

- Two independent weighted draws; the first is kept unless the heavier of
  the two has at least ``intervene_tokens`` in prefill, then the lighter.
  Below that the weights decide alone (they encode cost and preference).
- A large request (``elephant_tokens`` uncached or more) skips deployments
  already at ``elephant_limit`` large prefills, so two of them queue on
  different replicas; when every candidate is at the limit the rule is
  dropped for the least loaded: it never refuses.
- A sticky binding is given up when its deployment's backlog is above
  ``affinity_ceiling`` (a cache-locality aid, not a promise to queue).

It never blocks, refuses or queues a request: it only picks another
deployment that was available anyway. Pure: loads in, a choice out.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from edgeproxy.config.deployment import Deployment


@dataclass(frozen=True, slots=True)
class PrefillSettings:
    """001's knobs, with its defaults."""

    enabled: bool = True
    intervene_tokens: int = 50_000
    elephant_tokens: int = 200_000
    elephant_limit: int = 1
    affinity_ceiling: int = 150_000


@dataclass(frozen=True, slots=True)
class PrefillLoad:
    """What one deployment is prefilling now: uncached tokens, and large requests among them."""

    tokens: int = 0
    elephants: int = 0


IDLE = PrefillLoad()


def _draw(pool: Sequence[Deployment], rng: random.Random) -> Deployment:
    total = sum(max(d.weight, 0) for d in pool)
    if total <= 0:
        return pool[rng.randrange(len(pool))]
    point = rng.uniform(0.0, total)
    for dep in pool:
        point -= max(dep.weight, 0)
        if point < 0 and dep.weight > 0:
            return dep
    return next(d for d in reversed(pool) if d.weight > 0)


def is_elephant(uncached_tokens: int, settings: PrefillSettings) -> bool:
    return uncached_tokens >= settings.elephant_tokens


def choose(
    candidates: Sequence[Deployment],
    loads: Mapping[str, PrefillLoad],
    uncached: Mapping[str, int],
    settings: PrefillSettings,
    rng: random.Random,
) -> Deployment:
    """The deployment to try first. ``uncached``: the request's uncached tokens per deployment
    (``hints.uncached``); a deployment missing from ``loads`` is idle."""
    if not candidates:
        raise ValueError("no candidates")
    if not settings.enabled:
        return _draw(candidates, rng)

    def load(dep: Deployment) -> PrefillLoad:
        return loads.get(dep.id, IDLE)

    # A large request skips the deployments already at their limit of large prefills.
    capped = {
        d.id
        for d in candidates
        if is_elephant(uncached.get(d.id, 0), settings)
        and load(d).elephants >= settings.elephant_limit
    }
    pool = [d for d in candidates if d.id not in capped]
    if not pool:
        return min(candidates, key=lambda d: load(d).tokens)  # all at the limit: least loaded
    first, second = _draw(pool, rng), _draw(pool, rng)
    heavier = max(load(first).tokens, load(second).tokens)
    if heavier >= settings.intervene_tokens and load(second).tokens < load(first).tokens:
        return second
    return first


def keep_binding(bound: PrefillLoad, settings: PrefillSettings) -> bool:
    """Whether a sticky binding is still followed: its deployment's backlog is within the ceiling."""
    return not settings.enabled or bound.tokens <= settings.affinity_ceiling
