"""A key's reservation is priced at the dearest token an answer may bring."""

from __future__ import annotations

import pytest

from edgeproxy.service.limits.reserve import price_bound
from tests.unit.routing.builders import dep


def test_a_cache_write_dearer_than_output_raises_the_bound() -> None:
    writes_dear = dep(
        "p", input_price_per_mtok=1.0, output_price_per_mtok=2.0, cache_write_price_per_mtok=5.0
    )
    assert price_bound([writes_dear]) == pytest.approx(5.0 / 1_000_000)
    assert price_bound([dep("q", input_price_per_mtok=1.0, output_price_per_mtok=2.0)]) == (
        pytest.approx(2.0 / 1_000_000)
    )
