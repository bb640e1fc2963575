"""The console's keys and log views with hostile names, filters, rotation and revocation,
in headless Chromium against a real gateway: names are text, no script runs, and the CSP
refuses a script the page did not ship."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta

import httpx
from playwright.async_api import Page, expect

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.browser.conftest import Watched
from tests.browser.views import go, sign_in
from tests.fixtures.secrets import remember
from tests.integration.keys.helpers import bearer
from tests.integration.usage.helpers import (
    ADMIN_KEY,
    ENV,
    admin_get,
    chat,
    gateway_config,
    new_key,
    priced,
    records,
)

remember(ADMIN_KEY)
HOSTILE_KEY = "<script>window.pwned=1</script>\"'><img src=x onerror=window.pwned=2>"
HOSTILE_TEAM = "<b onmouseover=window.pwned=3>team</b>\"'"
# What Chromium logs when the CSP refuses the inline script this test tries to add.
REFUSED_INLINE = ("console error: Executing inline script violates",)


def _post(base_url: str, path: str, body: dict[str, object]) -> dict[str, object]:
    answer = httpx.post(base_url + path, json=body, headers=bearer(ADMIN_KEY), timeout=10)
    assert answer.status_code in (200, 201), answer.text
    data: dict[str, object] = answer.json()
    return data


def _setup(base_url: str) -> dict[str, dict[str, object]]:
    _post(base_url, "/admin/organizations", {"id": "acme", "name": "Acme"})
    _post(base_url, "/admin/teams", {"id": "red", "name": HOSTILE_TEAM, "organization_id": "acme"})
    soon = (datetime.now(UTC) + timedelta(days=3)).isoformat()
    made = {
        "hostile": new_key(base_url, HOSTILE_KEY, team_id="red"),
        "plain": new_key(base_url, "plain-app", expires_at=soon),
        "old": new_key(base_url, "old-app"),
    }
    for answer in made.values():
        remember(str(answer["key"]))
    _post(base_url, f"/admin/keys/{made['old']['id']}/revoke", {})
    return made


async def _rows(page: Page, count: int) -> None:
    await expect(page.locator("#keys-list tbody tr")).to_have_count(count)


async def test_hostile_names_are_text_filters_narrow_and_rotate_and_revoke_work(
    start_gateway, upstream_a: MockUpstream, watched: Watched
) -> None:
    gw = await asyncio.to_thread(start_gateway, gateway_config(priced("a", upstream_a)), env=ENV)
    made = await asyncio.to_thread(_setup, gw.base_url)
    started = time.time()
    assert (
        await asyncio.to_thread(chat, gw.base_url, str(made["hostile"]["key"]))
    ).status_code == 200
    [record] = await asyncio.to_thread(records, gw.base_url, started, 1)
    page = watched.page
    await sign_in(page, gw.base_url, "keys")
    await _rows(page, 3)
    hostile = page.locator(f'[data-key="{made["hostile"]["id"]}"]')
    await expect(hostile.locator("td.name")).to_have_text(HOSTILE_KEY)
    await expect(page.locator("#key-filter-team option[value=red]")).to_have_text(
        f"{HOSTILE_TEAM} (red)"
    )

    await page.select_option("#key-filter-status", "revoked")
    await _rows(page, 1)
    await expect(page.locator("#keys-list tbody tr")).to_contain_text("old-app")
    await page.select_option("#key-filter-status", "")
    await page.select_option("#key-filter-team", "red")
    await _rows(page, 1)
    await page.select_option("#key-filter-team", "-")
    await _rows(page, 2)
    await page.select_option("#key-filter-team", "")
    await page.select_option("#key-filter-expiry", "week")
    await _rows(page, 1)
    await expect(page.locator("#keys-list tbody tr")).to_contain_text("plain-app")
    await page.select_option("#key-filter-expiry", "")
    await page.fill("#key-search", "OLD-")
    await _rows(page, 1)
    await page.fill("#key-search", "")
    await _rows(page, 3)

    plain = page.locator(f'[data-key="{made["plain"]["id"]}"]')
    await plain.locator(".act-rotate").click()
    await page.fill("#key-grace-hours", "1")
    await page.click("#key-action-ok")
    await expect(page.locator("#key-secret")).to_be_visible()
    rotated = remember(await page.input_value("#key-secret-value"))
    assert rotated != made["plain"]["key"]
    await expect(plain).to_have_attribute("data-status", "rotating")
    for secret in (rotated, str(made["plain"]["key"])):  # the old one, for the grace hour
        assert (await asyncio.to_thread(chat, gw.base_url, secret)).status_code == 200
    await page.click("#key-secret-done")

    await hostile.locator(".act-revoke").click()
    await expect(page.locator("#key-action-text")).to_contain_text(HOSTILE_KEY)
    await page.click("#key-action-ok")
    await expect(hostile).to_have_attribute("data-status", "revoked")
    await expect(hostile.locator(".act-edit")).to_be_disabled()
    shown = admin_get(gw.base_url, f"/admin/keys/{made['hostile']['id']}").json()
    assert shown["revoked"] is True

    await go(page, "log")
    await page.fill(
        "#log-hour", datetime.fromtimestamp(record["at"], UTC).strftime("%Y-%m-%dT%H:00")
    )
    await page.dispatch_event("#log-hour", "change")
    await expect(page.locator(f'[data-request="{record["request_id"]}"]')).to_be_visible()
    await page.select_option("#log-team", "red")  # the hostile key's team: its one request
    rows = page.locator("#log-list tbody tr")
    await expect(rows).to_have_count(1)
    await expect(rows.locator("td").nth(1)).to_have_text(f"{HOSTILE_KEY} ({made['hostile']['id']})")
    await rows.locator(".act-open-record").click()
    await expect(page.locator("#log-record")).to_contain_text("team red")

    # Nothing from the API became markup, and no script ran.
    assert await page.locator("#board script, #board img, #board b").count() == 0
    assert await page.evaluate("window.pwned === undefined")
    # The CSP holds: an inline script added to the page is refused, not run.
    ran = await page.evaluate(
        "() => { const s = document.createElement('script'); s.textContent = 'window.inline = 1';"
        " document.body.append(s); return window.inline === 1; }"
    )
    assert ran is False
    assert watched.problems(REFUSED_INLINE) == []
    assert any(e.startswith(REFUSED_INLINE) for e in watched.errors), watched.errors
