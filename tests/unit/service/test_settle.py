"""Outcome writes after the answer went out: store failures are logged, never raised."""

from __future__ import annotations

import pytest

from edgeproxy.errors import StoreUnavailable
from edgeproxy.service.outcomes import settle


async def test_a_failed_outcome_write_is_logged_not_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def failing() -> None:
        raise StoreUnavailable("table throttled")

    await settle(failing())
    assert "could not record" in caplog.text

    async def broken() -> None:
        raise ValueError("a bug, not the store")

    with pytest.raises(ValueError, match="a bug"):
        await settle(broken())  # only store failures are expected here
