"""The console's keys view (``keys.js``, ``key_form.js``) and request log view (``log.js``)
in headless Chromium, against a real gateway: a key created in the page serves the openai
SDK, and its request is found and opened in the page's log."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

import openai
from playwright.async_api import expect

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.browser.conftest import Watched
from tests.browser.views import go, screenshots, sign_in
from tests.fixtures.secrets import remember
from tests.integration.usage.helpers import ADMIN_KEY, ENV, gateway_config, priced, records

remember(ADMIN_KEY)


def _ask(base_url: str, secret: str) -> str:
    with openai.OpenAI(base_url=base_url + "/v1", api_key=secret, max_retries=0) as sdk:
        answer = sdk.chat.completions.create(
            model="fast-chat", messages=[{"role": "user", "content": "Hello!"}]
        )
    return answer.id


async def test_a_key_made_in_the_page_serves_the_sdk_and_its_request_opens_in_the_log(
    start_gateway, upstream_a: MockUpstream, watched: Watched
) -> None:
    gw = await asyncio.to_thread(start_gateway, gateway_config(priced("a", upstream_a)), env=ENV)
    page = watched.page
    await sign_in(page, gw.base_url, "keys")
    await expect(page.locator("#keys-view")).to_have_attribute("data-loaded", "true")

    await page.click("#key-new")
    form = page.locator("#key-form")
    await form.get_by_label("Name").fill("billing-app")
    await form.get_by_label("Requests per minute").fill("120")
    await form.get_by_label("Budget (USD)").fill("5")
    await page.click("#key-save")
    await expect(page.locator("#key-secret")).to_be_visible()
    secret = remember(await page.input_value("#key-secret-value"))
    assert secret.startswith("ep-"), secret
    row = page.locator("#keys-list tbody tr", has_text="billing-app")
    await expect(row).to_contain_text("120 rpm")
    await expect(row).to_contain_text("of $5.0000 total")
    await screenshots(page, "keys")
    await page.click("#key-secret-done")
    await expect(page.locator("#key-secret")).to_be_hidden()
    assert secret not in await page.content()  # shown once: gone from the page

    started = time.time()
    await asyncio.to_thread(_ask, gw.base_url, secret)
    [record] = await asyncio.to_thread(records, gw.base_url, started, 1)  # polled, with a deadline

    await go(page, "log")
    hour = datetime.fromtimestamp(record["at"], UTC).strftime("%Y-%m-%dT%H:00")
    await page.fill("#log-hour", hour)  # the record's hour, even if the clock turned one since
    await page.dispatch_event("#log-hour", "change")
    await expect(page.locator("#log-hour-shown")).to_contain_text(", 1 record")
    key_option = await page.locator("#log-key option", has_text="billing-app").get_attribute(
        "value"
    )
    await page.select_option("#log-key", key_option)
    await page.select_option("#log-status", "2xx")
    rows = page.locator("#log-list tbody tr")
    await expect(rows).to_have_count(1)
    await expect(rows.first).to_contain_text("fast-chat")
    await page.select_option("#log-status", "5xx")
    await expect(rows).to_have_count(0)
    await page.select_option("#log-status", "")
    await page.click(f'[data-request="{record["request_id"]}"] .act-open-record')
    opened = page.locator("#log-record")
    await expect(opened).to_contain_text(record["request_id"])
    await expect(opened.locator('.attempts [data-deployment="a"]')).to_contain_text(
        "served the answer"
    )
    await expect(opened).to_contain_text(f"${record['cost_usd']:.4f}")
    await expect(opened).to_contain_text(f"{record['latency_ms']} ms in all")
    assert record["cost_usd"] > 0
    await screenshots(page, "log")

    await page.click("#log-explain")  # the explainer, for this model and key
    await expect(page.locator("#status-views")).to_be_visible()
    await expect(page.locator("#explain-verdict")).to_contain_text("fast-chat for")
    await expect(page.locator("#explain-table tr")).to_have_count(2)
    assert watched.problems() == []
