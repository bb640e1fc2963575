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


def _two_teams(base_url: str) -> dict[str, dict[str, object]]:
    """Teams red and blue of one organization, a key in each, and red's admin."""
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


async def test_a_team_admin_sees_and_manages_only_their_team(
    start_gateway, upstream_a: MockUpstream, watched: Watched
) -> None:
    gw = await asyncio.to_thread(start_gateway, gateway_config(priced("a", upstream_a)), env=ENV)
    made = await asyncio.to_thread(_two_teams, gw.base_url)
    page = watched.page
    await page.goto(gw.base_url + "/admin/")
    await page.fill("#key", str(made["lead"]["key"]))
    await page.click("#login-form button[type=submit]")
    # No status view for a team's admin (the API refuses it): the keys view instead.
    await expect(page.locator("#keys-views")).to_be_visible()
    await expect(page.locator("#keys-view")).to_have_attribute("data-loaded", "true")
    rows = page.locator("#keys-list tbody tr")
    await expect(rows).to_have_count(2)
    await expect(page.locator("#keys-list")).not_to_contain_text("blue-app")

    # A key made in the page lands in red, the only team offered.
    await page.click("#key-new")
    form = page.locator("#key-form")
    await expect(form.locator("[name=team_id] option")).to_have_text(["(no team)", "Red (red)"])
    await form.get_by_label("Name").fill("red-new")
    await form.get_by_label("Team").select_option("red")
    await page.click("#key-save")  # every model: more than the lead's own key may give
    await expect(page.locator("#key-form-error")).to_contain_text("more rights than its own")
    await expect(form.locator("[name=models]")).to_have_attribute("aria-invalid", "true")
    await form.get_by_label("Models").fill("fast-chat")
    await page.click("#key-save")
    await expect(page.locator("#key-secret")).to_be_visible()
    remember(await page.input_value("#key-secret-value"))
    await expect(rows).to_have_count(3)
    await page.click("#key-secret-done")

    await page.click('#nav a[href="#teams"]')
    await expect(page.locator("#teams-list tbody tr")).to_have_count(1)
    await expect(page.locator('tr[data-team="red"]')).to_contain_text("3")
    # Another team's object by its address: the API's refusal, shown by the page.
    await page.goto(gw.base_url + "/admin/#teams?team=blue")
    await expect(page.locator("#teams-error")).to_contain_text("Team blue:")
    await expect(page.locator("#team-members")).to_be_hidden()
    await page.goto(gw.base_url + "/admin/#teams?team=red")
    await expect(page.locator("#team-members [data-key]")).to_have_count(3)
    await page.click('#nav a[href="#status"]')
    await expect(page.locator("#status-scoped")).to_be_visible()
    await expect(page.locator("#pools-view")).to_be_hidden()
    refused = "console error: Failed to load resource: the server responded with a status of 403"
    assert watched.problems((refused,)) == []
