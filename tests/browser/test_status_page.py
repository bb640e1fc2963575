"""The status page at ``/admin/`` in headless Chromium, against a real gateway and mock upstreams.

The page refreshes every second here (``?every=1``; 5 s by default), and
``#updated``'s ``data-refreshes`` counts its refreshes, so "within two
refreshes" is counted, not timed. Cooldowns are jumped over with the test's
clock, never slept through.
"""

from __future__ import annotations

import asyncio
from typing import Any

from playwright.async_api import Page, expect

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.browser.conftest import ARTIFACTS, Watched
from tests.fixtures.clock import FleetClock
from tests.fixtures.configs import config, deployment
from tests.fixtures.gateway import AUTH_REQUIRED
from tests.fixtures.secrets import remember
from tests.fixtures.table import wait_for
from tests.integration.admin.helpers import (
    ADMIN_ACTOR,
    ADMIN_KEY,
    CLIENT_KEY,
    admin,
    chat,
    keys,
    ok,
)

remember(ADMIN_KEY)
remember(CLIENT_KEY)
# What Chromium itself logs for an answer of 401/403: expected only where a key is refused.
REFUSED = ("console error: Failed to load resource: the server responded with a status of 40",)


def _config(a: MockUpstream, b: MockUpstream, *, sticky: bool = False) -> dict[str, Any]:
    return config(
        deployment("a", a, priority=1, rpm_limit=100),
        deployment("b", b, tpm_limit=50_000),
        gateway=keys(),
        router={
            "circuit": {"allowed_fails": 0, "cooldown_seconds": 20},
            "sticky": {"enabled": sticky},
        },
    )


async def _open(page: Page, base_url: str) -> None:
    await page.goto(base_url + "/admin/?every=1")


async def _sign_in(page: Page, key: str = ADMIN_KEY) -> None:
    await page.fill("#key", key)
    await page.click("#login-form button[type=submit]")


def _state(page: Page, dep: str) -> Any:
    return page.locator(f'[data-deployment="{dep}"] .state')


async def _refreshes(page: Page) -> int:
    return int(await page.get_attribute("#updated", "data-refreshes") or 0)


async def _wait_refreshes(page: Page, count: int) -> None:
    await page.wait_for_function(
        "n => Number(document.querySelector('#updated').dataset.refreshes) >= n", arg=count
    )


async def test_the_page_refuses_without_a_key_and_loads_with_one(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream, watched: Watched
) -> None:
    gw = await asyncio.to_thread(start_gateway, _config(upstream_a, upstream_b), env=AUTH_REQUIRED)
    page = watched.page
    await _open(page, gw.base_url)

    # No key: a login form and nothing else; the page asked the API for nothing.
    await expect(page.locator("#login")).to_be_visible()
    await expect(page.locator("#board")).to_be_hidden()
    assert not [r for r in watched.requests if "/admin/status" in r.url]

    await _sign_in(page, "sk-nobody-issued-this")
    await expect(page.locator("#login-error")).to_contain_text("does not know it")
    await _sign_in(page, CLIENT_KEY)
    await expect(page.locator("#login-error")).to_contain_text("not an admin key")
    await expect(page.locator("#board")).to_be_hidden()
    assert await page.evaluate("sessionStorage.length") == 0  # a refused key is not kept

    await _sign_in(page)
    await expect(_state(page, "a")).to_have_text("available")
    await expect(_state(page, "b")).to_have_text("available")
    await expect(page.locator('[data-pool="fast-chat"] h2')).to_have_text("fast-chat")
    assert await page.evaluate("sessionStorage.getItem('edgeproxy.adminKey')") == ADMIN_KEY
    assert await page.context.cookies() == []
    # The key travels only as the bearer header: never in a URL.
    assert all(ADMIN_KEY not in r.url for r in watched.requests)
    status = [r for r in watched.requests if r.url.split("?")[0].endswith("/admin/status")]
    assert (await status[-1].all_headers())["authorization"] == f"Bearer {ADMIN_KEY}"

    await page.reload()  # the tab keeps its key across a reload
    await expect(_state(page, "a")).to_have_text("available")
    await page.goto(gw.base_url + "/admin/")  # by default the page redraws every 5 s
    await expect(page.locator("#updated")).to_contain_text("every 5 s")
    await page.click("#signout")
    await expect(page.locator("#login")).to_be_visible()
    await expect(page.locator("[data-deployment]")).to_have_count(0)
    assert await page.evaluate("sessionStorage.length") == 0
    assert watched.problems(allowed=REFUSED) == []


def _stored_state(base_url: str, dep: str, state: str) -> None:
    """Wait until the outcome write left the circuit in ``state`` (it lands after the answer)."""
    wait_for(
        lambda: ok(admin(base_url, "GET", f"/admin/circuits/{dep}"))["state"],
        lambda found: found == state,
        f"circuit {dep} {state}",
    )


async def test_a_failing_deployment_turns_to_cooldown_within_two_refreshes_and_recovers(
    start_gateway,
    clock: FleetClock,
    upstream_a: MockUpstream,
    upstream_b: MockUpstream,
    watched: Watched,
) -> None:
    gw = await asyncio.to_thread(start_gateway, _config(upstream_a, upstream_b))
    page = watched.page
    await _open(page, gw.base_url)
    await _sign_in(page)
    await expect(_state(page, "a")).to_have_text("available")
    await page.evaluate("window.stillThisPage = true")  # gone if the page ever reloaded

    upstream_a.set_faults([], persistent={"status": 500})
    served = chat(gw.base_url).headers["x-edgeproxy-deployment"]
    assert served == "b"  # a failed: its circuit opened
    await asyncio.to_thread(_stored_state, gw.base_url, "a", "open")
    seen = await _refreshes(page)  # counted from when the store has it
    await expect(_state(page, "a")).to_have_text("cooldown")
    assert await _refreshes(page) <= seen + 2
    card = page.locator('[data-deployment="a"]')
    await expect(card.locator(".why")).to_contain_text("circuit open (transient)")
    # The retry-after countdown runs live between refreshes.
    countdown = card.locator(".countdown")
    first = int((await countdown.inner_text()).removesuffix(" s"))
    assert 0 < first <= 25
    await page.wait_for_function(
        "n => parseInt(document.querySelector('[data-deployment=\"a\"] .countdown')"
        ".textContent) < n",
        arg=first,
    )

    upstream_a.clear()
    clock.advance(40)  # past the cooldown (20 s, jittered by up to a quarter)
    await expect(_state(page, "a")).to_have_text("half_open")
    assert chat(gw.base_url).headers["x-edgeproxy-deployment"] == "a"  # the probe succeeds
    await asyncio.to_thread(_stored_state, gw.base_url, "a", "closed")
    seen = await _refreshes(page)
    await expect(_state(page, "a")).to_have_text("available")
    assert await _refreshes(page) <= seen + 2
    assert await page.evaluate("window.stillThisPage === true")  # redrawn, never reloaded
    assert watched.problems() == []


def _traffic(gw_url: str, clock: FleetClock, a: MockUpstream, b: MockUpstream) -> None:
    """A few minutes of traffic, with a transient failure and a throttle, for the sparklines."""
    for minute in range(6):
        if minute in (1, 3):
            a.set_faults([{"latency_ms": 300 * minute}])
            b.set_faults([{"latency_ms": 200 * minute}])
        if minute == 2:
            a.set_faults([{"status": 500}])
        if minute == 4:
            b.set_faults([{"status": 429, "retry_after": "1"}])
        for request in range(2 + minute % 3):
            assert chat(gw_url).status_code == 200
            if minute == 4 and request == 0:
                # b's 429 sent this one to a, as the probe of its half-open circuit (open
                # since minute 2); its success is written after the answer, and until then
                # the held probe leaves no deployment for the next request.
                _stored_state(gw_url, "a", "closed")
        clock.advance(60)


async def _confirm(page: Page, button: str, *, reason: str | None = None) -> None:
    await page.click(button)
    await expect(page.locator("#confirm")).to_be_visible()
    if reason is not None:
        await page.fill("#confirm-reason", reason)
        await page.fill("#confirm-minutes", "15")
    await page.click("#confirm-ok")
    await expect(page.locator("#confirm")).to_be_hidden()


def _audited(base_url: str) -> list[tuple[str, str, str]]:
    entries = ok(admin(base_url, "GET", "/admin/audit?limit=50"))["data"]
    return [(e["action"], e["target"], e["actor"]) for e in entries]


async def test_actions_are_confirmed_and_audited_and_a_screenshot_is_saved(
    start_gateway,
    clock: FleetClock,
    upstream_a: MockUpstream,
    upstream_b: MockUpstream,
    watched: Watched,
) -> None:
    gw = await asyncio.to_thread(start_gateway, _config(upstream_a, upstream_b, sticky=True))
    await asyncio.to_thread(_traffic, gw.base_url, clock, upstream_a, upstream_b)
    page = watched.page
    await _open(page, gw.base_url)
    await _sign_in(page)
    await expect(_state(page, "b")).to_have_text("available")

    # Cancelled: nothing happens, nothing is audited.
    await page.click('[data-deployment="b"] .act-drain')
    await page.click("#confirm-cancel")
    await expect(page.locator("#confirm")).to_be_hidden()

    await _confirm(page, '[data-deployment="b"] .act-open', reason="provider maintenance")
    await expect(_state(page, "b")).to_have_text("cooldown")
    await expect(page.locator('[data-deployment="b"] .why')).to_contain_text("maintenance")
    await expect(page.locator('#audit li[data-action="circuit.force-open"]')).to_have_count(1)
    assert ("circuit.force-open", "b", ADMIN_ACTOR) in _audited(gw.base_url)

    await _wait_refreshes(page, await _refreshes(page) + 1)
    await _screenshots(page)

    await _confirm(page, '[data-deployment="b"] .act-close')
    await expect(_state(page, "b")).to_have_text("available")
    await _confirm(page, '[data-deployment="a"] .act-drain')
    await expect(_state(page, "a")).to_have_text("drained")
    await expect(page.locator('[data-deployment="a"] .act-undrain')).to_have_text("Undo drain…")
    await _confirm(page, '[data-pool="fast-chat"] .act-invalidate')
    await expect(page.locator('#audit li[data-action="binding.invalidate"]')).to_have_count(1)

    done = [(action, target) for action, target, _ in _audited(gw.base_url)]
    assert done[:4] == [
        ("binding.invalidate", "fast-chat"),
        ("deployment.update", "a"),
        ("circuit.close", "b"),
        ("circuit.force-open", "b"),
    ]
    assert ok(admin(gw.base_url, "GET", "/admin/deployments/a"))["enabled"] is False
    assert watched.problems() == []


async def _screenshots(page: Page) -> None:
    """The page as an operator sees it (desktop and phone), saved under tests/artifacts/."""
    ARTIFACTS.mkdir(exist_ok=True)
    desktop = ARTIFACTS / "status-page.png"
    await page.screenshot(path=str(desktop), full_page=True)
    await page.set_viewport_size({"width": 390, "height": 844})
    await expect(page.locator('[data-deployment="a"]')).to_be_visible()
    # Nothing wider than a phone: no sideways scrolling.
    assert await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    await page.screenshot(path=str(ARTIFACTS / "status-page-phone.png"), full_page=True)
    await page.set_viewport_size({"width": 1280, "height": 900})
