"""An attempt's closing usage writes: counters in its start bucket, the sample where it finished."""

from __future__ import annotations

import asyncio

from edgeproxy.routing.snapshot import Second
from edgeproxy.service.admission import Attempt
from edgeproxy.state.store import UsageDelta
from tests.unit.routing.builders import dep

MINUTE = 1000


def _attempt() -> Attempt:
    return Attempt(dep("d"), MINUTE, MINUTE * 60.0 + 50, probe=False, sticky=False, owner="o")


def test_the_sample_goes_in_the_second_the_answer_finished() -> None:
    sample = Second(1, 120, 1, 30.0)
    deltas = asyncio.run(_attempt().ended(0, (MINUTE * 60.0 + 57.9, sample), successes=1))
    assert deltas == [UsageDelta("d", MINUTE, inflight=-1, successes=1, seconds={57: sample})]


def test_an_answer_finished_in_a_later_minute_adds_its_sample_there() -> None:
    sample = Second(1, 15_000)
    deltas = asyncio.run(_attempt().ended(0, ((MINUTE + 1) * 60.0 + 5.2, sample), successes=1))
    assert deltas == [
        UsageDelta("d", MINUTE, inflight=-1, successes=1),
        UsageDelta("d", MINUTE + 1, seconds={5: sample}),
    ]


def test_without_a_sample_nothing_per_second_is_written() -> None:
    deltas = asyncio.run(_attempt().ended(0, failures=1))
    assert deltas == [UsageDelta("d", MINUTE, inflight=-1, failures=1)]
