"""Two operators change the same key in two browser sessions: the second sees the conflict.

Each edit is a PATCH with If-Match: the version read when its editor opened. The
second session's write is refused (409) and the page says what changed since it opened
the key; saving again applies only what the second operator changed, so neither change
is lost.
"""

from __future__ import annotations

import asyncio

from playwright.async_api import Browser, Page, expect

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.browser.views import sign_in
from tests.fixtures.secrets import remember
from tests.integration.usage.helpers import (
    ADMIN_KEY,
    ENV,
    admin_get,
    gateway_config,
    new_key,
    priced,
)

remember(ADMIN_KEY)


async def _editor(browser: Browser, base_url: str, key_id: str, errors: list[str]) -> Page:
    """A session of its own (its own session storage) with the key's editor open."""
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    page = await context.new_page()
    page.set_default_timeout(15_000)
    page.on("pageerror", lambda error: errors.append(str(error)))
    await sign_in(page, base_url, "keys")
    await page.click(f'[data-key="{key_id}"] .act-edit')
    await expect(page.locator("#key-editor")).to_be_visible()
    return page


async def test_the_second_session_sees_what_changed_and_keeps_both_changes(
    start_gateway, upstream_a: MockUpstream, browser: Browser
) -> None:
    gw = await asyncio.to_thread(start_gateway, gateway_config(priced("a", upstream_a)), env=ENV)
    key = await asyncio.to_thread(new_key, gw.base_url, "shared-app", rpm_limit=60)
    errors: list[str] = []
    first = await _editor(browser, gw.base_url, key["id"], errors)
    second = await _editor(browser, gw.base_url, key["id"], errors)  # both opened version 0
    try:
        await first.locator("#key-form").get_by_label("Requests per minute").fill("100")
        await first.click("#key-save")
        await expect(first.locator("#key-editor")).to_be_hidden()
        await expect(first.locator(f'[data-key="{key["id"]}"]')).to_contain_text("100 rpm")

        form = second.locator("#key-form")
        await form.get_by_label("Budget (USD)").fill("7.5")
        await second.click("#key-save")
        conflict = second.locator("#key-conflict")
        await expect(conflict).to_be_visible()
        await expect(conflict).to_contain_text("Changed by someone else since you opened it")
        fields = second.locator("#key-conflict-fields li")
        await expect(fields).to_have_count(1)
        await expect(fields.first).to_have_text("Requests per minute: 60 → 100")
        # The other's value taken into the field this operator left alone; theirs kept.
        await expect(form.get_by_label("Requests per minute")).to_have_value("100")
        await expect(form.get_by_label("Budget (USD)")).to_have_value("7.5")
        shown = admin_get(gw.base_url, f"/admin/keys/{key['id']}").json()
        assert (shown["rpm_limit"], shown["budget_usd"]) == (100, None)  # refused, not applied

        await second.click("#key-save")
        await expect(second.locator("#key-editor")).to_be_hidden()
        row = second.locator(f'[data-key="{key["id"]}"]')
        await expect(row).to_contain_text("100 rpm")
        await expect(row).to_contain_text("of $7.5000 total")
        shown = admin_get(gw.base_url, f"/admin/keys/{key['id']}").json()
        assert (shown["rpm_limit"], shown["budget_usd"], shown["version"]) == (100, 7.5, 2)
        assert errors == []
    finally:
        await first.context.close()
        await second.context.close()
