"""The status page's routing explainer form (``admin_ui/explain.js``) in headless Chromium."""

from __future__ import annotations

import asyncio

from playwright.async_api import expect

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.browser.conftest import Watched
from tests.fixtures.secrets import remember
from tests.integration.admin.helpers import ADMIN_KEY, admin, ok, two_deployments

remember(ADMIN_KEY)


async def test_the_form_shows_each_candidate_as_text(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream, watched: Watched
) -> None:
    gw = await asyncio.to_thread(start_gateway, two_deployments(upstream_a, upstream_b))
    order = {"version": 0, "reason": "r", "seconds": 600}
    await asyncio.to_thread(
        lambda: ok(admin(gw.base_url, "POST", "/admin/circuits/a/open", json=order))
    )
    calls = len(upstream_a.requests()) + len(upstream_b.requests())
    page = watched.page
    await page.goto(gw.base_url + "/admin/")
    await page.fill("#key", ADMIN_KEY)
    await page.click("#login-form button[type=submit]")
    await expect(page.locator("#board")).to_be_visible()

    await page.fill("#explain-model", "fast-chat")
    # A caller id is echoed back: it must appear as text, never as markup.
    await page.fill("#explain-caller", "grant:<b>bold</b>")
    await page.click("#explain-form button[type=submit]")

    verdict = page.locator("#explain-verdict")
    await expect(verdict).to_contain_text("fast-chat for grant:<b>bold</b> (free): b by")
    assert await page.locator("#explain-verdict b").count() == 0
    rows = page.locator("#explain-table tr")
    await expect(rows).to_have_count(3)
    await expect(rows.nth(1)).to_contain_text("circuit open (maintenance)")
    await expect(rows.nth(2)).to_contain_text("chosen")
    assert len(upstream_a.requests()) + len(upstream_b.requests()) == calls

    await page.fill("#explain-model", "no-such-model")
    await page.click("#explain-form button[type=submit]")
    await expect(page.locator("#explain-error")).to_contain_text("does not exist")
    allowed = ("console error: Failed to load resource: the server responded with a status of 404",)
    assert watched.problems(allowed) == []
