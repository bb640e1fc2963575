"""The deployments, routing and usage-over-time views with hostile names, and with a team's
admin signed in, in headless Chromium against a real gateway: names are text in tables,
SVG titles and options, no script runs; a team admin's usage is its team's only, and the
deployments view shows the API's refusal."""

from __future__ import annotations

import asyncio
import time
from urllib.parse import quote

import httpx
from playwright.async_api import expect

from edgeproxy.routing.judge.end_user import END_USER_HEADER
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.browser.conftest import Watched
from tests.browser.views import go, screenshots, sign_in
from tests.fixtures.configs import deployment
from tests.fixtures.secrets import remember
from tests.fixtures.table import wait_for
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
HOSTILE_MODEL = "<img src=x onerror=window.pwned=3>"
REFUSED = "console error: Failed to load resource: the server responded with a status of 403"


def _send(base_url: str, method: str, path: str, body: dict[str, object]) -> None:
    etag = httpx.get(base_url + "/admin/deployments", headers=bearer(ADMIN_KEY)).headers["etag"]
    headers = {**bearer(ADMIN_KEY), "if-match": etag}
    answer = httpx.request(method, base_url + path, json=body, headers=headers, timeout=10)
    assert answer.status_code in (200, 201), answer.text


def _cache_rule(base_url: str, pool: str) -> None:
    version = httpx.get(base_url + "/admin/cache", headers=bearer(ADMIN_KEY)).json()["version"]
    headers = {**bearer(ADMIN_KEY), "if-match": f'"{version}"'}
    path = f"/admin/cache/pools/{quote(pool, safe='')}"
    answer = httpx.put(base_url + path, json={"scope": "key"}, headers=headers, timeout=10)
    assert answer.status_code == 200, answer.text


async def test_hostile_names_in_the_new_views_are_text_and_run_nothing(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream, watched: Watched
) -> None:
    config = gateway_config(priced("a", upstream_a), deployment("b", upstream_b, HOSTILE_MODEL))
    gw = await asyncio.to_thread(start_gateway, config, env=ENV)
    await asyncio.to_thread(
        _send, gw.base_url, "PUT", "/admin/aliases/legacy", {"model": HOSTILE_MODEL}
    )
    await asyncio.to_thread(_cache_rule, gw.base_url, HOSTILE_MODEL)
    key = await asyncio.to_thread(new_key, gw.base_url, HOSTILE_KEY)
    started = time.time()
    assert (await asyncio.to_thread(chat, gw.base_url, remember(key["key"]))).status_code == 200
    await asyncio.to_thread(records, gw.base_url, started, 1)
    page = watched.page
    await sign_in(page, gw.base_url, "deployments")
    await expect(page.locator('[data-deployment-row="b"] td').nth(1)).to_have_text(HOSTILE_MODEL)
    await expect(page.locator("#pool-pick option", has_text=HOSTILE_MODEL)).to_have_count(1)
    await page.select_option("#pool-pick", HOSTILE_MODEL)
    await expect(page.locator("#pool-effective")).to_contain_text(f"Pool {HOSTILE_MODEL}")
    await expect(page.locator("#pool-effective")).to_contain_text("Aliases: legacy.")
    alias = page.locator('#aliases-list [data-alias="legacy"] td')
    await expect(alias.nth(1)).to_have_text(HOSTILE_MODEL)
    await page.locator('[data-deployment-row="b"] .act-edit').click()
    await expect(page.locator("#dep-editor-title")).to_have_text("Change deployment b")
    await expect(page.locator("#dep-form [name=model]")).to_have_value(HOSTILE_MODEL)
    await page.click("#dep-cancel")
    rule = page.locator(f'#cache-list tr[data-rule="pools/{HOSTILE_MODEL}"] td')
    await expect(rule.nth(1)).to_have_text(HOSTILE_MODEL)
    await rule.locator(".act-cache-edit").click()
    await expect(page.locator("#cache-name")).to_have_value(HOSTILE_MODEL)

    await go(page, "usage")
    requests = page.locator('#usage-time-view [data-measure="requests"]')
    series = f"{HOSTILE_KEY} ({key['id']})"
    await expect(requests.locator("tbody tr[data-series]").first).to_have_text(series + "1")
    title = requests.locator("rect.seg title")
    await expect(title).to_have_count(1)
    assert (await title.text_content() or "").startswith(series + " · ")
    await page.select_option("#usage-by", "model")
    await expect(requests.locator("tbody tr[data-series]").first).to_contain_text("fast-chat")
    await screenshots(page, "hostile-usage")

    board = page.locator("#board")
    assert await board.locator("script, img, b, foreignObject").count() == 0
    assert await page.locator("#board svg [onload], #board [onerror]").count() == 0
    assert await page.evaluate("window.pwned === undefined")
    assert watched.problems() == []


def _red_and_blue(base_url: str) -> dict[str, dict[str, object]]:
    for path, body in (
        ("/admin/organizations", {"id": "acme", "name": "Acme"}),
        ("/admin/teams", {"id": "red", "name": "Red", "organization_id": "acme"}),
        ("/admin/teams", {"id": "blue", "name": "Blue", "organization_id": "acme"}),
    ):
        answer = httpx.post(base_url + path, json=body, headers=bearer(ADMIN_KEY), timeout=10)
        assert answer.status_code == 201, answer.text
    fast = {"models": ["fast-chat"]}
    made = {
        "lead": new_key(base_url, "red-lead", team_id="red", admin_of="team:red", **fast),
        "red": new_key(base_url, "red-app", team_id="red", **fast),
        "blue": new_key(base_url, "blue-app", team_id="blue", **fast),
    }
    for answer in made.values():
        remember(str(answer["key"]))
    return made


async def test_a_team_admin_sees_its_team_s_usage_only_and_the_refusal_of_deployments(
    start_gateway, upstream_a: MockUpstream, watched: Watched
) -> None:
    gw = await asyncio.to_thread(start_gateway, gateway_config(priced("a", upstream_a)), env=ENV)
    made = await asyncio.to_thread(_red_and_blue, gw.base_url)
    started = time.time()
    for name in ("red", "blue", "blue"):
        answer = await asyncio.to_thread(chat, gw.base_url, str(made[name]["key"]))
        assert answer.status_code == 200, answer.text
    await asyncio.to_thread(records, gw.base_url, started, 3)
    page = watched.page
    await page.goto(gw.base_url + "/admin/#usage")
    await page.fill("#key", str(made["lead"]["key"]))
    await page.click("#login-form button[type=submit]")
    await expect(page.locator("#usage-views")).to_be_visible()
    requests = page.locator('#usage-time-view [data-measure="requests"]')
    await expect(requests.locator("tbody tr[data-series]")).to_have_count(1)
    await expect(requests.locator("tbody tr[data-series]")).to_contain_text("red-app")
    await expect(requests.locator("tr.total")).to_have_text("Total1")  # not blue's two

    await page.goto(gw.base_url + "/admin/#deployments")
    await expect(page.locator("#deps-error")).to_contain_text("Deployments could not be read")
    await expect(page.locator("#deps-list tbody tr")).to_have_count(0)
    await expect(page.locator("#router-error")).to_be_visible()
    assert watched.problems((REFUSED,)) == []


HOSTILE_ORG = "<svg onload=window.pwned=4>Acme</svg>"
HOSTILE_USER = "<img src=x onerror=window.pwned=5>alice"


def _chat_as(base_url: str, key: str, end_user: str) -> None:
    body = {"model": "fast-chat", "messages": [{"role": "user", "content": "hello"}]}
    headers = {**bearer(key), END_USER_HEADER: end_user}
    answer = httpx.post(base_url + "/v1/chat/completions", json=body, headers=headers, timeout=30)
    assert answer.status_code == 200, answer.text


def _aggregated(base_url: str, requests: int) -> None:
    """Wait until the usage report by organization counts ``requests``."""
    wait_for(
        lambda: admin_get(base_url, "/admin/usage", group_by="organization").json(),
        lambda r: r["totals"]["requests"] >= requests,
        f"{requests} requests in the hourly aggregates",
    )


def _org_team_key(base_url: str) -> str:
    for path, body in (
        ("/admin/organizations", {"id": "acme", "name": HOSTILE_ORG}),
        ("/admin/teams", {"id": "red", "name": "Red", "organization_id": "acme"}),
    ):
        answer = httpx.post(base_url + path, json=body, headers=bearer(ADMIN_KEY), timeout=10)
        assert answer.status_code == 201, answer.text
    return remember(str(new_key(base_url, "red-app", team_id="red")["key"]))


async def test_usage_by_organization_and_the_log_by_end_user_with_hostile_names(
    start_gateway, upstream_a: MockUpstream, watched: Watched
) -> None:
    gw = await asyncio.to_thread(start_gateway, gateway_config(priced("a", upstream_a)), env=ENV)
    in_org = await asyncio.to_thread(_org_team_key, gw.base_url)
    alone = remember(str((await asyncio.to_thread(new_key, gw.base_url, "no-org"))["key"]))
    started = time.time()
    await asyncio.to_thread(_chat_as, gw.base_url, in_org, HOSTILE_USER)
    await asyncio.to_thread(_chat_as, gw.base_url, in_org, "bob")
    await asyncio.to_thread(_chat_as, gw.base_url, alone, "carol")
    await asyncio.to_thread(records, gw.base_url, started, 3)
    # The hourly aggregates the charts read are written apart from the records: wait for them.
    await asyncio.to_thread(_aggregated, gw.base_url, 3)
    page = watched.page
    await sign_in(page, gw.base_url, "usage")
    await page.select_option("#usage-by", "organization")
    requests = page.locator('#usage-time-view [data-measure="requests"]')
    rows = requests.locator("tbody tr[data-series]")
    await expect(rows).to_have_count(2)
    await expect(rows.nth(0)).to_have_text(f"{HOSTILE_ORG} (acme)2")
    await expect(rows.nth(1)).to_have_text("(no organization)1")
    title = requests.locator("rect.seg title").first
    await expect(title).to_contain_text(f"{HOSTILE_ORG} (acme) · ")
    await screenshots(page, "usage-by-organization")

    await go(page, "log")
    log = page.locator("#log-list tbody tr[data-request]")
    await expect(log).to_have_count(3)
    await page.fill("#log-end-user", HOSTILE_USER)
    await page.press("#log-end-user", "Enter")
    await expect(log).to_have_count(1)  # the API's end_user filter, not bob's nor carol's
    await expect(log.first.locator("td").nth(2)).to_have_text(HOSTILE_USER)
    await log.first.locator(".act-open-record").click()
    await expect(page.locator("#log-record")).to_contain_text(f"End user{HOSTILE_USER}")
    await expect(page.locator("#log-record")).to_contain_text("organization acme")
    await page.fill("#log-end-user", "")
    await page.press("#log-end-user", "Enter")
    await expect(log).to_have_count(3)
    await screenshots(page, "log-end-user")

    board = page.locator("#board")
    assert await board.locator("script, img, svg[onload], foreignObject").count() == 0
    assert await page.evaluate("window.pwned === undefined")
    assert watched.problems() == []
