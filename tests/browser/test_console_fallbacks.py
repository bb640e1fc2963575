"""The fallback chains in the deployments & routing view, in headless Chromium against a real
gateway: the configuration's chains are listed, one added and one removed in the page land
through the admin API with the version read, and a stale version is the page's conflict."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from playwright.async_api import expect

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.browser.conftest import Watched
from tests.browser.views import screenshots, sign_in
from tests.fixtures.configs import deployment
from tests.fixtures.secrets import remember
from tests.integration.keys.helpers import bearer
from tests.integration.usage.helpers import ADMIN_KEY, ENV, admin_get, gateway_config

remember(ADMIN_KEY)
CONFLICT = "Changed by someone else since you opened it"


def _chains(base_url: str) -> dict[str, list[str]]:
    answer = admin_get(base_url, "/admin/fallbacks")
    assert answer.status_code == 200, answer.text
    found: list[dict[str, Any]] = answer.json()["fallbacks"]
    return {f"{f['model']}/{f.get('reason', 'general')}": f["to"] for f in found}


def _behind_the_page(base_url: str) -> None:
    """Another operator's edit: the page's version is stale after it."""
    etag = admin_get(base_url, "/admin/fallbacks").headers["etag"]
    answer = httpx.put(
        base_url + "/admin/fallbacks/content_policy/big-chat",
        json={"to": ["fast-chat"]},
        headers={**bearer(ADMIN_KEY), "if-match": etag},
        timeout=10,
    )
    assert answer.status_code == 200, answer.text


async def test_fallback_chains_are_shown_added_removed_and_conflicts_said(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream, watched: Watched
) -> None:
    config = gateway_config(
        deployment("a", upstream_a),
        deployment("b", upstream_b, "big-chat"),
        fallbacks=[{"model": "fast-chat", "reason": "context_window", "to": ["big-chat"]}],
    )
    gw = await asyncio.to_thread(start_gateway, config, env=ENV)
    page = watched.page
    await sign_in(page, gw.base_url, "deployments")
    shown = page.locator('#fallbacks-list tr[data-fallback="fast-chat/context_window"] td')
    await expect(shown.nth(2)).to_have_text("big-chat")
    await expect(shown.nth(3)).to_have_text("(the router's)")

    await page.fill("#fallback-model", "fast-chat")
    await page.select_option("#fallback-reason", "general")
    await page.fill("#fallback-to", "big-chat, fast-chat")
    await page.click("#fallback-save")
    await expect(page.locator("#routing-saved")).to_contain_text("fallbacks of fast-chat (general)")
    added = page.locator('#fallbacks-list tr[data-fallback="fast-chat/general"] td')
    await expect(added.nth(2)).to_have_text("big-chat → fast-chat")
    chains = await asyncio.to_thread(_chains, gw.base_url)
    assert chains == {
        "fast-chat/context_window": ["big-chat"],
        "fast-chat/general": ["big-chat", "fast-chat"],
    }

    await asyncio.to_thread(_behind_the_page, gw.base_url)
    await added.locator(".act-fallback-delete").click()
    await expect(page.locator("#fallback-error")).to_contain_text(CONFLICT)
    assert "fast-chat/general" in await asyncio.to_thread(_chains, gw.base_url)
    # The page read again: the other operator's chain is shown, and the removal now lands.
    await expect(
        page.locator('#fallbacks-list tr[data-fallback="big-chat/content_policy"]')
    ).to_have_count(1)
    await added.locator(".act-fallback-delete").click()
    await expect(
        page.locator('#fallbacks-list tr[data-fallback="fast-chat/general"]')
    ).to_have_count(0)
    await expect(page.locator("#fallback-error")).to_be_hidden()
    chains = await asyncio.to_thread(_chains, gw.base_url)
    assert chains == {
        "fast-chat/context_window": ["big-chat"],
        "big-chat/content_policy": ["fast-chat"],
    }

    await page.locator('[data-fallback="fast-chat/context_window"] .act-fallback-edit').click()
    await expect(page.locator("#fallback-to")).to_be_focused()
    await expect(page.locator("#fallback-to")).to_have_value("big-chat")
    await screenshots(page, "fallbacks")
    problems = watched.problems()
    assert all("status of 409" in p for p in problems), problems
