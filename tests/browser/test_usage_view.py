"""The status page's usage view (``usage.js``) in headless Chromium, against a real gateway."""

from __future__ import annotations

import asyncio

from playwright.async_api import expect

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.browser.conftest import Watched
from tests.integration.usage.helpers import (
    ADMIN_KEY,
    ENV,
    chat,
    gateway_config,
    new_key,
    priced,
)
from tests.integration.usage.test_usage_report import settled_report

HOSTILE = '<img src=x onerror="window.pwned=1">'


async def test_the_usage_view_shows_spend_by_key_and_model_as_text(
    start_gateway, upstream_a: MockUpstream, watched: Watched
) -> None:
    gw = await asyncio.to_thread(start_gateway, gateway_config(priced("a", upstream_a)), env=ENV)
    key = await asyncio.to_thread(new_key, gw.base_url, HOSTILE)
    for _ in range(2):
        answer = await asyncio.to_thread(chat, gw.base_url, key["key"])
        assert answer.status_code == 200
    report = await asyncio.to_thread(settled_report, gw.base_url, 2)
    spend = report["totals"]["cost_usd"]
    page = watched.page
    await page.goto(gw.base_url + "/admin/?every=1")
    await page.fill("#key", ADMIN_KEY)
    await page.click("#login-form button[type=submit]")
    await expect(page.locator("#usage-view")).to_have_attribute("data-loaded", "true")
    for window in ("#usage-day", "#usage-month"):
        row = page.locator(f"{window} tbody tr").first
        cells = row.locator("td")
        await expect(cells.nth(0)).to_have_text(HOSTILE)  # the name as text, never markup
        await expect(cells.nth(1)).to_have_text("fast-chat")
        await expect(cells.nth(2)).to_have_text("2")
        await expect(cells.nth(4)).to_have_text(f"${spend:.4f}")
    assert await page.locator("#usage-view img").count() == 0
    assert await page.evaluate("window.pwned === undefined")
    assert watched.problems() == []
