"""The explainer on the status view shows the levels above a key (``levels``) and the one that
would refuse it (``refused_by``: level, id, reason), as text, in headless Chromium."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from playwright.async_api import expect

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.browser.conftest import Watched
from tests.browser.views import sign_in
from tests.fixtures.configs import config, deployment
from tests.fixtures.secrets import remember
from tests.integration.keys.helpers import ADMIN_KEY, ENV, bearer, create_key

remember(ADMIN_KEY)


def _member(base_url: str, team: dict[str, Any]) -> dict[str, Any]:
    for path, body in (
        ("/admin/organizations", {"id": "acme", "name": "Acme", "budget_usd": 100}),
        ("/admin/teams", {"name": team["id"], "organization_id": "acme", **team}),
    ):
        made = httpx.post(base_url + path, json=body, headers=bearer(ADMIN_KEY), timeout=10)
        assert made.status_code == 201, made.text
    return create_key(base_url, name="member", team_id=team["id"])


def _chat(base_url: str, secret: str) -> httpx.Response:
    body = {"model": "fast-chat", "messages": [{"role": "user", "content": "hi"}]}
    return httpx.post(
        base_url + "/v1/chat/completions", json=body, headers=bearer(secret), timeout=30
    )


async def test_a_refusal_at_the_team_level_names_level_id_and_reason(
    start_gateway, upstream_a: MockUpstream, watched: Watched
) -> None:
    gw = await asyncio.to_thread(start_gateway, config(deployment("a", upstream_a)), env=ENV)
    # A team of one request a minute, used up by its key's first request.
    key = await asyncio.to_thread(_member, gw.base_url, {"id": "tight", "rpm_limit": 1})
    first = await asyncio.to_thread(_chat, gw.base_url, key["key"])
    assert first.status_code == 200, first.text
    other = await asyncio.to_thread(create_key, gw.base_url, name="solo")
    page = watched.page
    await sign_in(page, gw.base_url, "status")
    await page.fill("#explain-model", "fast-chat")
    await page.fill("#explain-caller", key["id"])
    await page.click("#explain-form button[type=submit]")

    refused = page.locator("#explain-refused")
    await expect(refused).to_be_visible()
    await expect(refused).to_contain_text("Refused at the team level, tight (rpm)")
    await expect(refused).to_have_attribute("data-level", "team")
    rows = page.locator("#explain-levels tr[data-level]")
    await expect(rows).to_have_count(2)  # the team, then its organization (each has a limit)
    team = page.locator('#explain-levels tr[data-level="team"]')
    await expect(team).to_have_class("explain-refused")
    await expect(team).to_contain_text("tight")
    await expect(team.locator("td").nth(2)).to_have_text("1 / 1")  # requests: used / limit
    org = page.locator('#explain-levels tr[data-level="organization"]')
    await expect(org).to_contain_text("acme")
    await expect(org.locator("td").nth(4)).to_have_text("$0.0000 / $100.00")  # spend / budget
    await expect(org).not_to_have_class("explain-refused")

    # A key in no team: no levels, no refusal; the earlier answer is gone.
    await page.fill("#explain-caller", other["id"])
    await page.click("#explain-form button[type=submit]")
    await expect(page.locator("#explain-verdict")).to_contain_text("a by")
    await expect(refused).to_be_hidden()
    await expect(page.locator("#explain-levels")).to_be_hidden()
    assert watched.problems() == []
