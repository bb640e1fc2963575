"""The console's teams view (``teams.js``) in headless Chromium against a real gateway: an
organization and a team made in the page, a key moved in and out, a stale change shown
as a conflict, an empty team deleted."""

from __future__ import annotations

import asyncio

import httpx
from playwright.async_api import expect

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.browser.conftest import Watched
from tests.browser.views import screenshots, sign_in
from tests.fixtures.secrets import remember
from tests.integration.keys.helpers import bearer
from tests.integration.usage.helpers import (
    ADMIN_KEY,
    ENV,
    admin_get,
    gateway_config,
    new_key,
    priced,
)

remember(ADMIN_KEY)


def _rename(base_url: str, version: int, name: str) -> httpx.Response:
    """Another admin's change of team ``red`` through the API (its version: ``version``)."""
    headers = {**bearer(ADMIN_KEY), "if-match": f'"{version}"'}
    return httpx.patch(base_url + "/admin/teams/red", json={"name": name}, headers=headers)


async def test_teams_are_made_changed_given_keys_and_deleted_in_the_page(
    start_gateway, upstream_a: MockUpstream, watched: Watched
) -> None:
    gw = await asyncio.to_thread(start_gateway, gateway_config(priced("a", upstream_a)), env=ENV)
    key = await asyncio.to_thread(new_key, gw.base_url, "app-1", models=["fast-chat"])
    wide = await asyncio.to_thread(new_key, gw.base_url, "wide-app")  # every model
    remember(key["key"])
    remember(wide["key"])
    page = watched.page
    await sign_in(page, gw.base_url, "teams")
    await expect(page.locator("#team-new")).to_be_disabled()  # no organization yet

    form = page.locator("#group-form")
    await page.click("#org-new")
    await form.get_by_label("Id").fill("acme")
    await form.get_by_label("Name").fill("Acme")
    await page.click("#group-save")
    await expect(page.locator('[data-organization="acme"]')).to_contain_text("Acme")
    await page.click("#team-new")
    await form.get_by_label("Id").fill("red")
    await form.get_by_label("Name").fill("Red team")
    await form.get_by_label("Models").fill("fast-chat")
    await page.click("#group-save")
    red = page.locator('[data-team="red"]')
    await expect(red).to_contain_text("Red team")
    await expect(red).to_contain_text("acme")

    await red.locator(".act-members").click()
    await page.select_option("#team-move-key", wide["id"])
    await page.click("#team-members .act-add")  # wider than the team allows: refused, shown
    await expect(page.locator("#team-members-error")).to_contain_text("allows every model")
    await page.select_option("#team-move-key", key["id"])
    await page.click("#team-members .act-add")
    await expect(page.locator(f'#team-members [data-key="{key["id"]}"]')).to_be_visible()
    await expect(red.locator("td").nth(4)).to_have_text("1")
    await expect(red.locator(".act-delete")).to_be_disabled()  # a team with keys stays
    assert admin_get(gw.base_url, f"/admin/keys/{key['id']}").json()["team_id"] == "red"
    await screenshots(page, "teams")

    # Someone renames the team after this page opened its editor: the page says so.
    await red.locator(".act-edit").click()
    version = admin_get(gw.base_url, "/admin/teams/red").json()["version"]
    renamed = await asyncio.to_thread(_rename, gw.base_url, version, "Red ops")
    assert renamed.status_code == 200, renamed.text
    await form.get_by_label("Models").fill("")  # every model
    await page.click("#group-save")
    await expect(page.locator("#group-conflict")).to_contain_text(
        "Changed by someone else since you opened it"
    )
    await expect(page.locator("#group-conflict-fields li")).to_have_text(
        ["Name: Red team → Red ops"]
    )
    await expect(form.get_by_label("Name")).to_have_value("Red ops")
    await page.click("#group-save")
    await expect(red).to_contain_text("every model")
    shown = admin_get(gw.base_url, "/admin/teams/red").json()
    assert (shown["name"], shown["models"]) == ("Red ops", None)

    await page.click(f'#team-members [data-key="{key["id"]}"] .act-remove')
    await expect(red.locator("td").nth(4)).to_have_text("0")
    await red.locator(".act-delete").click()
    await page.click("#key-action-ok")
    await expect(red).to_have_count(0)
    assert admin_get(gw.base_url, "/admin/teams/red").status_code == 404
    refused = "console error: Failed to load resource: the server responded with a status of "
    assert watched.problems((refused + "400", refused + "409")) == []  # the move, the conflict
