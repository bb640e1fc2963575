"""How far a deployment's real token counts run above the gateway's estimate of them.

Upstreams report the prompt tokens they counted; the gateway's estimate
(``routing.estimates.tokens.prompt_bound``) is made before the call, from the text
alone. ``Calibration`` keeps, per deployment and protocol, a smoothed ratio
of reported to estimated, so that an estimate made before the next call (or
after a stream that reported nothing) can scale by what that deployment's
tokenizer has been counting:

    ratio' = ratio + SMOOTHING * (reported / estimated - ratio)
    ratio used = clamp(ratio, 1, MAX_RATIO)      (a reservation, ``scaled``)

A reservation's ratio is never below 1: the estimate is already
conservative, and a calibration never makes a reservation smaller than it.
At most ``MAX_RATIO``: an upstream reporting absurd counts can inflate its
own pool's reservations only so far. The first sample sets the ratio (there
is none before it: a raw completion prompt the tokenizer counts at half the
bound is counted so from the first answer on); after that a sample above the
current ratio moves it at once (an estimate that falls short must not stay
short for several requests), one below moves it by ``SMOOTHING``. Pure: the caller keeps the values (in
process: ``service.limits.calibrations``) and passes them in.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

SMOOTHING = 0.2
MAX_RATIO = 4.0


@dataclass(frozen=True, slots=True)
class Calibration:
    """One deployment's ratio of reported to estimated tokens, from ``samples`` answers."""

    ratio: float = 1.0
    samples: int = 0


def observed(current: Calibration, estimated: int, reported: int) -> Calibration:
    """``current`` after one answer whose upstream counted ``reported`` against ``estimated``.

    An answer without a count (``reported`` 0) or without an estimate leaves it as it was.

    >>> observed(Calibration(), estimated=10, reported=15)
    Calibration(ratio=1.5, samples=1)
    >>> observed(Calibration(1.5, 1), estimated=10, reported=10).ratio
    1.4
    >>> observed(Calibration(), estimated=6, reported=3)
    Calibration(ratio=0.5, samples=1)
    """
    if estimated <= 0 or reported <= 0:
        return current
    sample = min(MAX_RATIO, reported / estimated)
    if current.samples == 0 or sample >= current.ratio:
        ratio = sample
    else:
        ratio = current.ratio + SMOOTHING * (sample - current.ratio)
    return Calibration(round(ratio, 6), current.samples + 1)


def scaled(estimate: int, ratio: float) -> int:
    """``estimate`` times ``ratio`` (kept within 1 and ``MAX_RATIO``), rounded up."""
    return math.ceil(estimate * min(MAX_RATIO, max(1.0, ratio)))


def highest(calibrations: Iterable[Calibration]) -> float:
    """The largest ratio of a pool (before routing, any of its deployments may serve)."""
    return max((c.ratio for c in calibrations), default=1.0)
