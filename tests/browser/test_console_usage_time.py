"""The console end to end in headless Chromium against a real gateway: an admin makes an
organization, a team and a key in the page, the key's secret serves the openai SDK, and
its request shows in the request log view (filtered by team, opened) and in the usage
over time view (``usage_time.js``, ``charts.js``): its bar in each chart, the numbers
beside it, and the API's CSV downloaded with the admin key."""

from __future__ import annotations

import asyncio
import csv
import io
import time
from datetime import UTC, datetime

import httpx
import openai
from playwright.async_api import Page, expect

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.browser.conftest import Watched
from tests.browser.views import go, screenshots, sign_in
from tests.fixtures.secrets import remember
from tests.integration.keys.helpers import bearer
from tests.integration.usage.helpers import ADMIN_KEY, ENV, gateway_config, priced, records

remember(ADMIN_KEY)


def _ask(base_url: str, secret: str) -> None:
    with openai.OpenAI(base_url=base_url + "/v1", api_key=secret, max_retries=0) as sdk:
        sdk.chat.completions.create(
            model="fast-chat", messages=[{"role": "user", "content": "Hello!"}]
        )


def _drain_a(base_url: str) -> None:
    headers = bearer(ADMIN_KEY)
    etag = httpx.get(base_url + "/admin/deployments/a", headers=headers).headers["etag"]
    answer = httpx.patch(
        base_url + "/admin/deployments/a",
        json={"enabled": False},
        headers={**headers, "if-match": etag},
    )
    assert answer.status_code == 200, answer.text


async def _team_and_key(page: Page) -> str:
    """Organization ``acme``, team ``red`` and key ``red-app`` in it, made in the page."""
    form = page.locator("#group-form")
    await page.click("#org-new")
    await form.get_by_label("Id").fill("acme")
    await form.get_by_label("Name").fill("Acme")
    await page.click("#group-save")
    await expect(page.locator('[data-organization="acme"]')).to_be_visible()
    await page.click("#team-new")
    await form.get_by_label("Id").fill("red")
    await form.get_by_label("Name").fill("Red team")
    await page.click("#group-save")
    await expect(page.locator('[data-team="red"]')).to_be_visible()
    await go(page, "keys")
    await expect(page.locator("#keys-view")).to_have_attribute("data-loaded", "true")
    await page.click("#key-new")
    keys = page.locator("#key-form")
    await keys.get_by_label("Name").fill("red-app")
    await keys.get_by_label("Team").select_option("red")
    await page.click("#key-save")
    await expect(page.locator("#key-secret")).to_be_visible()
    secret = remember(await page.input_value("#key-secret-value"))
    await page.click("#key-secret-done")
    return secret


async def test_a_key_made_in_the_page_shows_in_the_log_and_the_usage_charts(
    start_gateway, upstream_a: MockUpstream, watched: Watched
) -> None:
    gw = await asyncio.to_thread(start_gateway, gateway_config(priced("a", upstream_a)), env=ENV)
    page = watched.page
    await sign_in(page, gw.base_url, "teams")
    secret = await _team_and_key(page)
    started = time.time()
    await asyncio.to_thread(_ask, gw.base_url, secret)
    [record] = await asyncio.to_thread(records, gw.base_url, started, 1)  # polled, with a deadline
    assert record["team"] == "red"

    await go(page, "log")
    hour = datetime.fromtimestamp(record["at"], UTC).strftime("%Y-%m-%dT%H:00")
    await page.fill("#log-hour", hour)
    await page.dispatch_event("#log-hour", "change")
    await expect(page.locator("#log-hour-shown")).to_contain_text(", 1 record")
    await page.select_option("#log-team", "red")
    rows = page.locator("#log-list tbody tr")
    await expect(rows).to_have_count(1)
    minute = datetime.fromtimestamp(record["at"], UTC).strftime("%H:%M")
    await page.fill("#log-from", minute)
    await expect(rows).to_have_count(1)
    await page.fill("#log-to", "00:00" if minute != "00:00" else "23:59")
    await page.fill("#log-from", "")
    if minute != "00:00":
        await expect(rows).to_have_count(0)  # a range that ends before the request
    await page.fill("#log-to", "")
    await rows.first.locator(".act-open-record").click()
    await expect(page.locator("#log-record")).to_contain_text("team red · organization acme")
    await expect(page.locator("#log-since")).to_have_attribute("data-changes", "0")
    await asyncio.to_thread(_drain_a, gw.base_url)  # an admin change after the request
    await page.click("#log-record-close")
    await rows.first.locator(".act-open-record").click()
    await expect(page.locator("#log-since")).to_have_attribute("data-changes", "1")
    await expect(page.locator("#log-since")).to_contain_text("deployment.update a")

    await go(page, "usage")
    await page.select_option("#usage-by", "team")
    view = page.locator("#usage-time-view")
    requests = view.locator('[data-measure="requests"]')
    await expect(requests.locator('tr[data-series="red"]')).to_contain_text("1")
    await expect(requests.locator('rect.seg[data-series="red"]')).to_have_count(1)
    spend = view.locator('[data-measure="spend"]')
    await expect(spend.locator('tr[data-series="red"]')).to_contain_text(
        f"${record['cost_usd']:.4f}"
    )
    tokens = record["prompt_tokens"] + record["completion_tokens"]
    await expect(view.locator('[data-measure="tokens"] tr.total')).to_contain_text(str(tokens))
    await expect(view.locator('[data-measure="errors"] tr.total')).to_contain_text("0")
    await page.select_option("#usage-by", "key")
    await expect(requests.locator("tbody tr[data-series]")).to_have_count(1)
    await expect(requests.locator("tbody tr[data-series]")).to_contain_text("red-app")
    await page.select_option("#usage-range", "7d")
    await expect(requests.locator("rect.seg")).to_have_count(1)

    async with page.expect_download() as waiting:
        await page.click("#usage-csv")
    download = await waiting.value
    text = (await download.path()).read_text()
    [row] = list(csv.DictReader(io.StringIO(text)))
    assert (row["key_name"], row["requests"]) == ("red-app", "1")
    assert download.suggested_filename == "edgeproxy-usage-7d-by-key.csv"
    await screenshots(page, "usage")
    assert watched.problems() == []
