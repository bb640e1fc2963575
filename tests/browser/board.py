"""What the status page's browser tests do to the page: open it, sign in, read a card, act.

The page refreshes every second here (``?every=1``); ``#updated``'s
``data-refreshes`` counts its refreshes.
"""

from __future__ import annotations

from typing import Any

from playwright.async_api import Locator, Page, expect

from tests.integration.admin.helpers import ADMIN_KEY, admin, ok


async def open_signed_in(page: Page, base_url: str) -> None:
    """Open ``/admin/`` redrawing every second, and sign in with the admin key."""
    await page.goto(base_url + "/admin/?every=1")
    await page.fill("#key", ADMIN_KEY)
    await page.click("#login-form button[type=submit]")
    await expect(page.locator("#board")).to_be_visible()


def card(page: Page, dep: str) -> Locator:
    """One deployment's card."""
    return page.locator(f'[data-deployment="{dep}"]')


def tile(page: Page, name: str) -> Locator:
    """The number of one summary tile (``pools-down``, ``drained``, ``errors``...)."""
    return page.locator(f'#summary [data-summary="{name}"] .n')


async def confirm(page: Page, button: str) -> str:
    """Click ``button``, confirm the dialog it opens; the dialog's text."""
    await page.click(button)
    await expect(page.locator("#confirm")).to_be_visible()
    text = await page.locator("#confirm-text").inner_text()
    await page.click("#confirm-ok")
    await expect(page.locator("#confirm")).to_be_hidden()
    return text


def force_open(base_url: str, dep: str, reason: str = "maintenance") -> None:
    """Force ``dep``'s circuit open for ten minutes through the admin API."""
    version = ok(admin(base_url, "GET", f"/admin/circuits/{dep}"))["version"]
    ok(
        admin(
            base_url,
            "POST",
            f"/admin/circuits/{dep}/open",
            json={"reason": reason, "seconds": 600},
            headers={"if-match": f'"{version}"'},
        )
    )


def patch(base_url: str, dep: str, body: dict[str, Any]) -> None:
    """Change fields of ``dep`` through the admin API (``{"enabled": False}`` drains it)."""
    etag = admin(base_url, "GET", f"/admin/deployments/{dep}").headers["etag"]
    ok(admin(base_url, "PATCH", f"/admin/deployments/{dep}", json=body, headers={"if-match": etag}))
