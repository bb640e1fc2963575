"""The console's deployments and routing view (``deployments.js``, ``routing.js``) in headless
Chromium against a real gateway: a deployment added after a connection test, a refused URL
shown on its field, a deployment disabled in the page that then gets no traffic, the
pool's strategy set with its effective settings and their sources, model rules and an
alias; a stale version shown as a conflict."""

from __future__ import annotations

import asyncio
import re

import httpx
import openai
from playwright.async_api import expect

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.browser.conftest import Watched
from tests.browser.views import screenshots, sign_in
from tests.fixtures.configs import deployment
from tests.fixtures.secrets import remember
from tests.integration.keys.helpers import bearer
from tests.integration.usage.helpers import ADMIN_KEY, ENV, admin_get, gateway_config, new_key

remember(ADMIN_KEY)
# What Chromium logs for an answer the test provokes on purpose (400 refused URL, 409 stale).
REFUSED = ("console error: Failed to load resource: the server responded with a status of 4",)


def _ask(base_url: str, secret: str, model: str, times: int) -> list[str]:
    """``times`` chat calls through the openai SDK; the deployment that served each."""
    served = []
    with openai.OpenAI(base_url=base_url + "/v1", api_key=secret, max_retries=0) as sdk:
        for _ in range(times):
            raw = sdk.chat.completions.with_raw_response.create(
                model=model, messages=[{"role": "user", "content": "Hello!"}]
            )
            served.append(raw.headers["x-edgeproxy-deployment"])
    return served


def _model_calls(upstream: MockUpstream) -> int:
    return sum(1 for r in upstream.requests() if r["path"].endswith("/chat/completions"))


async def test_a_deployment_added_after_its_test_and_one_disabled_in_the_page_gets_no_traffic(
    start_gateway,
    make_upstream,
    upstream_a: MockUpstream,
    upstream_b: MockUpstream,
    watched: Watched,
) -> None:
    config = gateway_config(deployment("a", upstream_a), deployment("b", upstream_b))
    gw = await asyncio.to_thread(start_gateway, config, env=ENV)
    key = await asyncio.to_thread(new_key, gw.base_url, "app")
    secret = remember(str(key["key"]))
    c = make_upstream("c")
    page = watched.page
    await sign_in(page, gw.base_url, "deployments")
    rows = page.locator("#deps-list tbody tr")
    await expect(rows).to_have_count(2)

    # A URL the egress rule refuses: the error is on the field, and nothing was called.
    await page.click("#dep-new")
    form = page.locator("#dep-form")
    await form.get_by_label("Id", exact=True).fill("c")
    await form.get_by_label("Pool (public model)").fill("other-chat")
    await form.get_by_label("Base URL").fill("http://169.254.169.254/v1")
    await form.get_by_label("Upstream model").fill("mock-small")
    await form.get_by_label("Credential reference").fill("env:EDGEPROXY_CRED_MOCK_KEY")
    await page.click("#dep-save")
    await expect(page.locator("#dep-form-error")).to_be_visible()
    await expect(form.get_by_label("Base URL")).to_have_attribute("aria-invalid", "true")
    await expect(rows).to_have_count(2)

    # The right URL: the test passes (one call to c), then the save stores it.
    await form.get_by_label("Base URL").fill(c.base_url)
    await page.click("#dep-test")
    await expect(page.locator("#dep-test-result")).to_contain_text("Connection test passed")
    assert _model_calls(c) == 1
    await page.click("#dep-save")
    await expect(page.locator("#dep-editor")).to_be_hidden()
    await expect(rows).to_have_count(3)
    assert _model_calls(c) == 1  # the save did not test again what had passed
    assert admin_get(gw.base_url, "/admin/deployments/c").json()["model"] == "other-chat"
    assert await asyncio.to_thread(_ask, gw.base_url, secret, "other-chat", 1) == ["c"]

    # Disabled in the page: every request goes to b, a's mock counts none.
    row_a = page.locator('[data-deployment-row="a"]')
    await row_a.locator(".act-toggle").click()
    await expect(row_a).to_have_attribute("data-enabled", "false")
    before = _model_calls(upstream_a)
    served = await asyncio.to_thread(_ask, gw.base_url, secret, "fast-chat", 8)
    assert served == ["b"] * 8
    assert _model_calls(upstream_a) == before

    # Weight changed in the editor (no connection field changed: saved without a test).
    await page.locator('[data-deployment-row="b"] .act-edit').click()
    await form.get_by_label("Weight").fill("2.5")
    await page.click("#dep-save")
    await expect(page.locator('[data-deployment-row="b"]')).to_contain_text("2.5")
    assert admin_get(gw.base_url, "/admin/deployments/b").json()["weight"] == 2.5
    assert _model_calls(c) == 2  # the connection test's and the SDK's: no test of b's weight
    await screenshots(page, "deployments")
    assert watched.problems(REFUSED) == []


def _patch_b(base_url: str, body: dict[str, object]) -> None:
    etag = admin_get(base_url, "/admin/deployments/b").headers["etag"]
    headers = {**bearer(ADMIN_KEY), "if-match": etag}
    answer = httpx.patch(base_url + "/admin/deployments/b", json=body, headers=headers)
    assert answer.status_code == 200, answer.text


async def test_routing_is_set_in_the_page_with_each_setting_s_source_and_conflicts_shown(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream, watched: Watched
) -> None:
    config = gateway_config(deployment("a", upstream_a), deployment("b", upstream_b))
    gw = await asyncio.to_thread(start_gateway, config, env=ENV)
    page = watched.page
    await sign_in(page, gw.base_url, "deployments")
    await expect(page.locator("#routing-view")).to_have_attribute("data-loaded", re.compile(r"\d+"))
    strategy = page.locator('#pool-effective [data-setting="tiers.0.strategy"]')
    await expect(strategy).to_have_attribute("data-level", "global")

    await page.select_option("#pool-strategy", "least-busy")
    await page.click("#pool-save")
    await expect(strategy).to_have_attribute("data-level", "pool")
    await expect(strategy).to_contain_text("least-busy")
    await expect(strategy).to_contain_text("pools.fast-chat.strategy")
    pool = admin_get(gw.base_url, "/admin/pools/fast-chat").json()
    assert pool["settings"]["strategy"] == "least-busy"

    await page.select_option("#router-preset", "interactive")
    await page.click("#router-save")
    saved = page.locator("#routing-saved")
    await expect(saved).to_contain_text("Saved: the router settings")
    assert admin_get(gw.base_url, "/admin/router-settings").json()["preset"] == "interactive"

    await page.select_option("#rules-model", "fast-chat")
    await page.fill("#rules-json", '{"strategy": "latency-based"}')
    await page.click("#rules-save")
    await expect(saved).to_contain_text("Saved: the rules of fast-chat")
    rules = admin_get(gw.base_url, "/admin/model-rules").json()["models"]
    assert rules["fast-chat"]["strategy"] == "latency-based"
    await page.fill("#rules-json", "{not json")
    await page.click("#rules-save")
    await expect(page.locator("#rules-error")).to_contain_text("not JSON")
    await expect(page.locator("#rules-json")).to_have_attribute("aria-invalid", "true")

    await page.fill("#alias-name", "gpt-4-legacy")
    await page.fill("#alias-model", "fast-chat")
    await page.fill("#alias-since", "2026-11-01T00:00")
    await page.fill("#alias-sunset", "2027-01-01T00:00")
    await page.click("#alias-save")
    await expect(page.locator('[data-alias="gpt-4-legacy"]')).to_contain_text("2027-01-01 00:00")
    alias = admin_get(gw.base_url, "/admin/aliases").json()["aliases"]["gpt-4-legacy"]
    assert alias["model"] == "fast-chat"
    assert alias["deprecation"]["sunset"].startswith("2027-01-01T00:00")

    # Someone else changes the configuration: the page's next write is refused and says so.
    await asyncio.to_thread(_patch_b, gw.base_url, {"weight": 3})
    await page.locator('[data-deployment-row="a"] .act-toggle').click()
    await expect(page.locator("#deps-error")).to_contain_text("Changed by someone else")
    assert admin_get(gw.base_url, "/admin/deployments/a").json()["enabled"] is True
    await expect(page.locator('[data-deployment-row="b"]')).to_contain_text("3")
    await screenshots(page, "routing")
    assert watched.problems(REFUSED) == []


async def test_a_stale_deployment_edit_shows_what_changed_and_keeps_both_changes(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream, watched: Watched
) -> None:
    config = gateway_config(deployment("a", upstream_a), deployment("b", upstream_b))
    gw = await asyncio.to_thread(start_gateway, config, env=ENV)
    page = watched.page
    await sign_in(page, gw.base_url, "deployments")
    await page.locator('[data-deployment-row="b"] .act-edit').click()
    form = page.locator("#dep-form")
    await asyncio.to_thread(_patch_b, gw.base_url, {"weight": 3})  # another admin, meanwhile
    await form.get_by_label("Priority (higher: tried first)").fill("2")
    await page.click("#dep-save")
    conflict = page.locator("#dep-conflict")
    await expect(conflict).to_contain_text("Changed by someone else since you opened it")
    await expect(page.locator("#dep-conflict-fields li")).to_have_text(["Weight: 1 → 3"])
    await expect(form.get_by_label("Weight")).to_have_value("3")
    await expect(form.get_by_label("Priority (higher: tried first)")).to_have_value("2")
    shown = admin_get(gw.base_url, "/admin/deployments/b").json()
    assert (shown["weight"], shown["priority"]) == (3, 0)  # refused, not applied
    await page.click("#dep-save")
    await expect(page.locator("#dep-editor")).to_be_hidden()
    shown = admin_get(gw.base_url, "/admin/deployments/b").json()
    assert (shown["weight"], shown["priority"]) == (3, 2)
    assert watched.problems(REFUSED) == []


# Every control of the new views: its accessible name (a label, aria-label or text).
UNNAMED = """(root) => [...document.querySelectorAll(root + ' :is(input, select, textarea, button)')]
  .filter((c) => !(c.labels && c.labels.length) && !c.getAttribute('aria-label')
                 && !c.textContent.trim())
  .map((c) => c.id || c.name || c.outerHTML.slice(0, 60))"""


async def test_the_new_views_are_labelled_and_reachable_by_keyboard(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream, watched: Watched
) -> None:
    config = gateway_config(deployment("a", upstream_a), deployment("b", upstream_b))
    gw = await asyncio.to_thread(start_gateway, config, env=ENV)
    page = watched.page
    await sign_in(page, gw.base_url, "deployments")
    await expect(page.locator("#routing-view")).to_have_attribute("data-loaded", re.compile(r"\d+"))
    await page.click("#dep-new")
    assert await page.evaluate(UNNAMED, "#deployments-views") == []
    await page.click("#dep-cancel")
    # From the view's first button, Tab reaches a row's toggle and Enter presses it.
    await page.focus("#dep-new")
    for _ in range(40):
        await page.keyboard.press("Tab")
        focused = await page.evaluate("document.activeElement.getAttribute('aria-label')")
        if focused == "Disable a":
            break
    assert focused == "Disable a"
    await page.keyboard.press("Enter")
    await expect(page.locator('[data-deployment-row="a"]')).to_have_attribute(
        "data-enabled", "false"
    )
    await page.click('#nav a[href="#usage"]')
    await expect(page.locator("#usage-time-view")).to_have_attribute(
        "data-loaded", re.compile(r"\d+")
    )
    assert await page.evaluate(UNNAMED, "#usage-views") == []
    assert watched.problems() == []
