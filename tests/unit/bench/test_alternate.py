"""``bench/alternate.py``'s report: per build, the median and lowest round, and calls per request."""

from __future__ import annotations

import collections
from pathlib import Path

from bench.alternate import Build, report


def test_the_report_gives_each_builds_median_and_lowest_round_and_its_calls_per_request() -> None:
    old = Build("old", Path("/old"), gateway_ms=[4.0, 3.0, 5.0], store_ms=[8.0, 6.0, 7.0])
    old.calls = collections.Counter({"BatchGetItem": 600, "UpdateItem": 150})
    old.requests = 600
    new = Build("new", Path("/new"), gateway_ms=[2.0, 4.0], store_ms=[5.0, 5.0])
    new.calls = collections.Counter({"BatchGetItem": 400})
    new.requests = 400
    lines = report([old, new]).splitlines()
    assert lines[1] == "old: 4.00, 3.00 | 7.00, 6.00 | BatchGetItem=1.00 UpdateItem=0.25"
    assert lines[2] == "new: 3.00, 2.00 | 5.00, 5.00 | BatchGetItem=1.00"
