"""The status page at a glance, in headless Chromium against a gateway and mock upstreams.

A summary bar counts what is wrong; pools in trouble come first, compact
enough that a forced-open circuit shows on a 1280x800 screen without
scrolling; each deployment shows its error rate and last error; a drained
deployment says so and the drain is undone from the page; a pool that
cannot serve says what it answers. Names from the configuration are shown
as text, never parsed.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from playwright.async_api import expect

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.browser.board import card, confirm, force_open, open_signed_in, patch, tile
from tests.browser.conftest import ARTIFACTS, Watched
from tests.fixtures.clock import FleetClock
from tests.fixtures.configs import config, deployment
from tests.fixtures.failover import failover_pair
from tests.fixtures.secrets import remember
from tests.integration.admin.helpers import ADMIN_ACTOR, CLIENT_KEY, admin, chat, keys, ok

SECRET = "sk-upstream-body-0123456789abcdef"
remember(SECRET)
HOSTILE = '<img src=x onerror="window.pwned=1">"\'&amp;<script>window.pwned=2</script>'


def _fleet(a: MockUpstream, b: MockUpstream) -> dict[str, Any]:
    """Five pools of two deployments; ``zulu`` (last by name) has ``zulu-a`` on ``a``."""
    deps = [
        deployment(f"{pool}-{n}", b, model=pool)
        for pool in ("alpha", "bravo", "charlie", "delta")
        for n in (1, 2)
    ]
    deps += [deployment("zulu-a", a, model="zulu"), deployment("zulu-b", b, model="zulu")]
    return config(*deps, gateway=keys())


async def test_the_summary_counts_trouble_and_a_forced_open_circuit_is_above_the_fold(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream, watched: Watched
) -> None:
    gw = await asyncio.to_thread(start_gateway, _fleet(upstream_a, upstream_b))
    await asyncio.to_thread(force_open, gw.base_url, "zulu-a")
    await asyncio.to_thread(patch, gw.base_url, "bravo-1", {"enabled": False})
    page = watched.page
    await page.set_viewport_size({"width": 1280, "height": 800})
    await open_signed_in(page, gw.base_url)

    await expect(tile(page, "pools-down")).to_have_text("0")
    await expect(tile(page, "pools-degraded")).to_have_text("2")
    await expect(tile(page, "cooldown")).to_have_text("1")
    await expect(tile(page, "throttled")).to_have_text("0")
    await expect(tile(page, "drained")).to_have_text("1")
    # Degraded pools first (by name), then the healthy ones.
    pools = page.locator("#pools [data-pool]")
    assert await pools.evaluate_all("ps => ps.map(p => p.dataset.pool)") == [
        "bravo",
        "zulu",
        "alpha",
        "charlie",
        "delta",
    ]
    await expect(page.locator('[data-pool="zulu"] .pool-state')).to_have_text("degraded")
    await expect(page.locator('[data-pool="alpha"] .pool-state')).to_have_text("healthy")

    # The forced-open card is whole inside the first screen, unscrolled.
    opened = card(page, "zulu-a")
    await expect(opened.locator(".state")).to_have_text("cooldown")
    await expect(opened.locator(".why")).to_contain_text("circuit open (maintenance)")
    box = await opened.bounding_box()
    assert box is not None
    assert await page.evaluate("window.scrollY") == 0
    assert box["y"] + box["height"] <= 800, box
    ARTIFACTS.mkdir(exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / "status-page-glance.png"))
    assert watched.problems() == []


async def test_error_rate_and_last_error_after_upstream_failures(
    start_gateway,
    clock: FleetClock,
    upstream_a: MockUpstream,
    upstream_b: MockUpstream,
    watched: Watched,
) -> None:
    gw = await asyncio.to_thread(
        start_gateway,
        config(
            *failover_pair(upstream_a, upstream_b),
            gateway=keys(),
            router={"circuit": {"allowed_fails": 100}, "sticky": {"enabled": False}},
        ),
    )
    page = watched.page
    await open_signed_in(page, gw.base_url)
    await expect(card(page, "a").locator(".err-rate")).to_have_text("no attempts in 5 min")
    await expect(card(page, "a").locator(".last-error")).to_have_text("none in the last hour")

    # a fails every attempt, its error naming a secret; b serves each request after it.
    upstream_a.set_faults([], persistent={"status": 500, "error": {"message": SECRET}})
    for _ in range(4):
        served = await asyncio.to_thread(chat, gw.base_url)
        assert served.headers["x-edgeproxy-deployment"] == "b"
    minute = int(clock.now() // 60) * 60
    hhmm = await page.evaluate("at => new Date(at * 1000).toISOString().slice(11, 16)", minute)

    a = card(page, "a")
    await expect(a.locator(".err-rate")).to_have_text("100 % of 4 attempts (4 failed)")
    await expect(a.locator(".last-error")).to_have_text(f"transient at {hhmm} UTC")
    await expect(card(page, "b").locator(".err-rate")).to_have_text("0 % of 4 attempts (0 failed)")
    await expect(card(page, "b").locator(".last-error")).to_have_text("none in the last hour")
    await expect(a.locator(".state")).to_have_text("available")  # the router still tries it
    await expect(page.locator('[data-pool="fast-chat"] .pool-state')).to_have_text("degraded")
    await expect(tile(page, "errors")).to_have_text("50 %")
    await expect(page.locator('#summary [data-summary="errors"]')).to_contain_text(
        "(4 of 8 attempts)"
    )
    assert SECRET not in await page.content()
    # The hour's sparklines are read when a card is unfolded, and stay across redraws.
    assert not [r for r in watched.requests if "/admin/history" in r.url]
    await a.locator("details.more > summary").click()
    await expect(a.locator(".sparks")).to_contain_text("Failures by class (4)")
    seen = int(await page.get_attribute("#updated", "data-refreshes") or 0)
    await page.wait_for_function(
        "n => Number(document.querySelector('#updated').dataset.refreshes) >= n", arg=seen + 2
    )
    await expect(a.locator(".sparks")).to_contain_text("Failures by class (4)")
    await expect(card(page, "b").locator("details.more")).not_to_have_attribute("open", "")
    assert watched.problems() == []


def _pair(a: MockUpstream, b: MockUpstream) -> dict[str, Any]:
    return config(deployment("a", a, weight=2), deployment("b", b), gateway=keys())


async def test_a_drained_deployment_shows_as_drained_and_is_undone_from_the_page(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream, watched: Watched
) -> None:
    gw = await asyncio.to_thread(start_gateway, _pair(upstream_a, upstream_b))
    page = watched.page
    await open_signed_in(page, gw.base_url)
    a = card(page, "a")
    await expect(a.locator(".state")).to_have_text("available")

    await confirm(page, '[data-deployment="a"] .act-drain')
    await expect(a.locator(".state")).to_have_text("drained")
    await expect(a.locator(".state")).not_to_have_class("state state-available")
    await expect(a.locator(".why")).to_contain_text(f"drained by {ADMIN_ACTOR} at")
    await expect(tile(page, "drained")).to_have_text("1")
    await expect(page.locator('[data-pool="fast-chat"] .pool-state')).to_have_text("degraded")
    drained = ok(admin(gw.base_url, "GET", "/admin/deployments/a"))
    assert (drained["enabled"], drained["weight"]) == (False, 2)  # weight keeps its meaning
    # Drained means no traffic, whatever the strategy ranks first (a is heavier and idle).
    served = len(upstream_a.requests())
    for _ in range(4):
        assert (await asyncio.to_thread(chat, gw.base_url)).status_code == 200
    assert len(upstream_a.requests()) == served

    said = await confirm(page, '[data-deployment="a"] .act-undrain')
    assert "Enable a again" in said
    await expect(a.locator(".state")).to_have_text("available")
    await expect(a.locator(".act-drain")).to_be_visible()
    await expect(tile(page, "drained")).to_have_text("0")
    await expect(page.locator('[data-pool="fast-chat"] .pool-state')).to_have_text("healthy")
    assert ok(admin(gw.base_url, "GET", "/admin/deployments/a"))["enabled"] is True
    entries = ok(admin(gw.base_url, "GET", "/admin/audit?limit=5"))["data"]
    switched = [
        c["new"] for e in entries for c in e["changes"] if c.get("path") == "deployments[a].enabled"
    ]
    assert switched == [True, False]  # newest first: the undo, then the drain
    assert watched.problems() == []


async def test_a_pool_left_with_drained_and_open_deployments_says_it_answers_503(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream, watched: Watched
) -> None:
    gw = await asyncio.to_thread(start_gateway, _pair(upstream_a, upstream_b))
    await asyncio.to_thread(patch, gw.base_url, "a", {"enabled": False})
    page = watched.page
    await open_signed_in(page, gw.base_url)
    pool = page.locator('[data-pool="fast-chat"]')
    await expect(pool.locator(".pool-state")).to_have_text("degraded")
    await expect(pool.locator(".notice")).to_have_count(0)

    await asyncio.to_thread(force_open, gw.base_url, "b")
    # a drained, b forced open: the router's answer is 503 model_overloaded with b's wait.
    await expect(pool.locator(".notice")).to_contain_text(
        "Answers 503 model_overloaded (Retry-After"
    )
    await expect(pool.locator(".notice")).to_contain_text(
        "now: no deployment can take a request (a drained, b cooldown)"
    )
    await expect(pool.locator(".pool-state")).to_have_text("down")
    await expect(tile(page, "pools-down")).to_have_text("1")
    refused = await asyncio.to_thread(chat, gw.base_url)
    assert refused.status_code == 503
    assert refused.json()["error"]["code"] == "model_overloaded"

    await confirm(page, '[data-deployment="b"] .act-close')
    await expect(pool.locator(".notice")).to_have_count(0)
    await expect(pool.locator(".pool-state")).to_have_text("degraded")
    assert (await asyncio.to_thread(chat, gw.base_url)).status_code == 200
    assert watched.problems() == []


async def test_hostile_names_and_reasons_are_shown_as_text(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream, watched: Watched
) -> None:
    gw = await asyncio.to_thread(
        start_gateway,
        config(
            deployment("x:1", upstream_a, model=HOSTILE),
            deployment("x:2", upstream_b, model=HOSTILE),
            gateway=keys(),
        ),
    )
    await asyncio.to_thread(patch, gw.base_url, "x:1", {"enabled": False})
    await asyncio.to_thread(force_open, gw.base_url, "x:2", reason=HOSTILE)
    page = watched.page
    await open_signed_in(page, gw.base_url)

    pool = page.locator("#pools [data-pool]")
    await expect(pool).to_have_count(1)
    assert await pool.get_attribute("data-pool") == HOSTILE
    await expect(pool.locator("h2")).to_have_text(HOSTILE)
    await expect(pool.locator(".notice")).to_contain_text("Answers 503")
    await expect(card(page, "x:2").locator(".why")).to_contain_text(HOSTILE)
    await expect(card(page, "x:1").locator(".state")).to_have_text("drained")
    # Nothing of it was parsed: no element it names exists, no script of it ran.
    assert await page.locator("#board img, #board script").count() == 0
    assert await page.evaluate("window.pwned === undefined")
    await page.click('[data-deployment="x:2"] details.more > summary')  # the details draw too
    await expect(card(page, "x:2").locator("dl.facts")).to_be_visible()
    assert await page.locator("#board img, #board script").count() == 0
    assert watched.problems() == []


def _stream(base_url: str, model: str) -> int:
    """One streamed chat with the client key, read to its end; its status."""
    answer = httpx.post(
        base_url + "/v1/chat/completions",
        json={"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": True},
        headers={"authorization": f"Bearer {CLIENT_KEY}"},
        timeout=30,
    )
    return answer.status_code


async def test_streams_ended_without_a_finish_reason_show_on_the_card_of_a_hostile_pool(
    start_gateway,
    clock: FleetClock,
    upstream_a: MockUpstream,
    upstream_b: MockUpstream,
    watched: Watched,
) -> None:
    gw = await asyncio.to_thread(
        start_gateway,
        config(
            deployment("x:1", upstream_a, model=HOSTILE, priority=1),
            deployment("x:2", upstream_b, model=HOSTILE),
            gateway=keys(),
            router={"sticky": {"enabled": False}},
        ),
    )
    page = watched.page
    await open_signed_in(page, gw.base_url)
    hostile = card(page, "x:1")
    await expect(hostile.locator(".err-rate")).to_have_text("no attempts in 5 min")
    await expect(hostile.locator(".unfinished")).to_have_count(0)  # none in the hour: not shown

    # x:1 ends two streams with [DONE] and no finish chunk.
    upstream_a.set_faults([{"finish_reason": None}, {"finish_reason": None}])
    for _ in range(3):
        assert await asyncio.to_thread(_stream, gw.base_url, HOSTILE) == 200
    minute = int(clock.now() // 60) * 60
    hhmm = await page.evaluate("at => new Date(at * 1000).toISOString().slice(11, 16)", minute)
    await expect(hostile.locator(".unfinished-count")).to_have_text(
        f"2 in 60 min, last at {hhmm} UTC"
    )
    await expect(hostile.locator(".unfinished")).to_contain_text(
        "streams ended without a finish reason"
    )
    await expect(hostile.locator(".err-rate")).to_have_text("0 % of 3 attempts (0 failed)")
    await expect(card(page, "x:2").locator(".unfinished")).to_have_count(0)

    # The page's window counts them: ten minutes on, the 5-minute window holds none.
    clock.advance(10 * 60)
    await page.select_option("#window", "5")
    await expect(hostile.locator(".unfinished-count")).to_have_text(
        f"0 in 5 min, last at {hhmm} UTC"
    )
    await expect(hostile.locator(".unfinished-count")).not_to_have_class("unfinished-count hot")
    await expect(page.locator("#pools [data-pool] h2")).to_have_text(HOSTILE)
    assert await page.locator("#board img, #board script").count() == 0
    assert await page.evaluate("window.pwned === undefined")
    assert watched.problems() == []
