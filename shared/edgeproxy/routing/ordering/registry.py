"""The strategy registry: each ordering strategy's name, parameters, ranker and reads.

A strategy is one ``StrategySpec``: its name (``config.strategies.Strategy``),
its parameter model (``config.strategies.PARAMS``: validated when the
configuration loads and on every admin write, unknown keys refused), the
ranker that orders one priority tier's candidates, a one-line summary, and
whether its metric reads the usage counters (the pool read fetches them
only then, or for the power-of-two-choices rule: ``strategies.reads_counters``).

Adding a strategy: a ``Strategy`` member and its parameter model in
``config.strategies``, then a ranker registered in ``routing.ordering.strategies``::

    @REGISTRY.register(Strategy.MY_WAY, "the fewest of something", counters=True)
    def _my_way(c, inputs, rng):  # inputs.params: the validated MyWayParams
        ...

``check()`` (run when ``routing.ordering.strategies`` is imported) refuses a name
without a ranker or without a parameter model, so a half-added strategy
fails at import, never on a request.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.strategies import PARAMS, Strategy, StrategyParams
from edgeproxy.routing.ordering.inputs import StrategyInputs

Ranker = Callable[[Sequence[Deployment], StrategyInputs, random.Random], list[Deployment]]


@dataclass(frozen=True, slots=True)
class StrategySpec:
    """One registered strategy."""

    name: Strategy
    params: type[StrategyParams]
    rank: Ranker
    summary: str
    counters: bool  # its metric reads usage counters (strategies.reads_counters adds p2c's)


class Registry:
    """Strategies by name; ``register`` adds one, ``spec`` finds one."""

    def __init__(self) -> None:
        self._specs: dict[Strategy, StrategySpec] = {}

    def register(
        self, name: Strategy, summary: str, *, counters: bool
    ) -> Callable[[Ranker], Ranker]:
        """Decorator: ``name`` ranks with the decorated function."""

        def add(rank: Ranker) -> Ranker:
            if name in self._specs:
                raise ValueError(f"strategy {name.value!r} is registered twice")
            if name not in PARAMS:
                raise ValueError(f"strategy {name.value!r} has no parameter model")
            self._specs[name] = StrategySpec(name, PARAMS[name], rank, summary, counters)
            return rank

        return add

    def spec(self, name: Strategy) -> StrategySpec:
        """The registered strategy ``name`` (KeyError if none)."""
        return self._specs[name]

    def __iter__(self) -> Iterator[StrategySpec]:
        return iter(self._specs[name] for name in Strategy if name in self._specs)

    def check(self) -> None:
        """Every strategy name has a ranker and a parameter model, and no ranker is extra."""
        missing = [s.value for s in Strategy if s not in self._specs]
        if missing:
            raise RuntimeError("strategies without a ranker: " + ", ".join(missing))
        unmodelled = [s.value for s in Strategy if s not in PARAMS]
        if unmodelled:
            raise RuntimeError("strategies without parameters: " + ", ".join(unmodelled))


REGISTRY = Registry()
