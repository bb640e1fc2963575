"""The console turns the response cache on and shows its hits, in headless Chromium against a
real gateway: the cache panel of the deployments view (``cache_rules.js``: a refused rule shown
on its field, a rule saved with its version, a stale version shown as a conflict), then two
identical requests (the second a hit, no upstream call) in the request log view (``cache:
hit`` and what it saved) and the usage over time view (the cache hits and savings charts)."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any

import httpx
from playwright.async_api import expect

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.browser.conftest import Watched
from tests.browser.views import go, screenshots, sign_in
from tests.fixtures.secrets import remember
from tests.integration.keys.helpers import bearer, create_key
from tests.integration.usage.helpers import ADMIN_KEY, ENV, chat, gateway_config, priced, records

remember(ADMIN_KEY)
CHAT = "/v1/chat/completions"


def _put_rule(base_url: str, path: str, body: dict[str, Any]) -> None:
    headers = bearer(ADMIN_KEY)
    version = httpx.get(base_url + "/admin/cache", headers=headers, timeout=10).json()["version"]
    answer = httpx.put(
        base_url + path,
        json=body,
        headers={**headers, "if-match": f'"{version}"'},
        timeout=10,
    )
    assert answer.status_code == 200, answer.text


async def test_the_page_turns_the_cache_on_and_shows_its_hits(
    start_gateway, upstream_a: MockUpstream, watched: Watched
) -> None:
    gw = await asyncio.to_thread(start_gateway, gateway_config(priced("a", upstream_a)), env=ENV)
    page = watched.page
    await sign_in(page, gw.base_url, "deployments")
    view = page.locator("#cache-view")
    await expect(view.locator("#cache-list")).to_contain_text("the response cache is off")

    # A team the table does not hold: refused, the field marked, nothing saved.
    form = page.locator("#cache-form")
    await form.get_by_label("Level").select_option("teams")
    await form.get_by_label("Pool, team or key id").fill("ghost")
    await page.click("#cache-save")
    await expect(page.locator("#cache-error")).to_contain_text("there is no team `ghost`")
    await expect(page.locator("#cache-name")).to_have_attribute("aria-invalid", "true")

    # The pool's rule, shared gateway-wide.
    await form.get_by_label("Level").select_option("pools")
    await form.get_by_label("Pool, team or key id").fill("fast-chat")
    await form.get_by_label("Shared by").select_option("gateway")
    await form.get_by_label("TTL (seconds)").fill("600")
    await page.click("#cache-save")
    await expect(page.locator("#cache-saved")).to_contain_text("the cache rule of pool fast-chat")
    await expect(page.locator("#cache-error")).to_be_hidden()
    rule = view.locator('tr[data-rule="pools/fast-chat"]')
    await expect(rule).to_contain_text("gateway")
    await expect(rule).to_contain_text("600 s")

    key = await asyncio.to_thread(create_key, gw.base_url, name="app")
    remember(key["key"])
    started = time.time()
    miss = await asyncio.to_thread(chat, gw.base_url, key["key"])
    hit = await asyncio.to_thread(chat, gw.base_url, key["key"])
    said = (miss.headers["x-edgeproxy-cache"], hit.headers["x-edgeproxy-cache"])
    assert said == ("miss", "hit")
    assert len([r for r in upstream_a.requests() if r["path"] == CHAT]) == 1
    found = await asyncio.to_thread(records, gw.base_url, started, 2)
    [stored] = [r for r in found if r["cache"] == "hit"]
    [first] = [r for r in found if r["cache"] != "hit"]
    assert stored["saved_usd"] == first["cost_usd"] > 0

    # Someone else changes the configuration: the page's next write is a conflict.
    await asyncio.to_thread(_put_rule, gw.base_url, f"/admin/cache/keys/{key['id']}", {})
    await rule.locator(".act-cache-delete").click()
    await expect(page.locator("#cache-error")).to_contain_text("Changed by someone else")
    await expect(view.locator(f'tr[data-rule="keys/{key["id"]}"]')).to_be_visible()
    await expect(rule).to_be_visible()  # nothing removed
    await screenshots(page, "cache")

    await go(page, "log")
    hour = datetime.fromtimestamp(stored["at"], UTC).strftime("%Y-%m-%dT%H:00")
    await page.fill("#log-hour", hour)
    await page.dispatch_event("#log-hour", "change")
    row = page.locator(f'#log-list tr[data-request="{stored["request_id"]}"]')
    await expect(row.locator('[data-cache="hit"]')).to_have_text("cache: hit")
    saved = f"${stored['saved_usd']:.4f}"
    await expect(row).to_contain_text(f"(saved {saved})")
    other = page.locator(f'#log-list tr[data-request="{first["request_id"]}"]')
    await expect(other.locator('[data-cache="miss"]')).to_have_text("cache: miss")
    await row.locator(".act-open-record").click()
    record = page.locator("#log-record")
    await expect(record).to_contain_text(f"hit · no upstream call · saved {saved}")
    await expect(record.locator(".attempts")).to_contain_text("answered from the response cache")

    await go(page, "usage")
    charts = page.locator("#usage-time-view")
    total = "tr.total td.num"
    await expect(charts.locator(f'[data-measure="cache"] {total}')).to_have_text("1")
    await expect(charts.locator('[data-measure="cache"] rect.seg')).to_have_count(1)
    await expect(charts.locator(f'[data-measure="saved"] {total}')).to_have_text(saved)
    await expect(charts.locator(f'[data-measure="requests"] {total}')).to_have_text("2")
    # The provider's prompt-cache tokens are their own chart (the mock reports none).
    await expect(charts.locator(f'[data-measure="prompt-cache"] {total}')).to_have_text("0")
    await screenshots(page, "usage-cache")
    allowed = ("console error: Failed to load resource: the server responded with a status of",)
    assert watched.problems(allowed) == []
