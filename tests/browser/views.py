"""What the console's browser tests do to its views: sign in, switch view, screenshot."""

from __future__ import annotations

from playwright.async_api import Page, expect

from tests.browser.conftest import ARTIFACTS
from tests.integration.keys.helpers import ADMIN_KEY


async def sign_in(page: Page, base_url: str, view: str) -> None:
    """Open the console on ``view`` (``keys``, ``log``) and sign in with the admin key."""
    await page.goto(f"{base_url}/admin/?every=5#{view}")
    await page.fill("#key", ADMIN_KEY)
    await page.click("#login-form button[type=submit]")
    await expect(page.locator(f"#{view}-views")).to_be_visible()


async def go(page: Page, view: str) -> None:
    """Switch to ``view`` with the page's own navigation link."""
    await page.click(f'#nav a[href="#{view}"]')
    await expect(page.locator(f"#{view}-views")).to_be_visible()


async def screenshots(page: Page, name: str) -> None:
    """``name`` at 1280x800 (the whole page, and the first screen alone: ``-glance``) and
    390x844 under ``ARTIFACTS``; nothing wider than a phone."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await page.set_viewport_size({"width": 1280, "height": 800})
    await page.evaluate("window.scrollTo(0, 0)")
    await page.screenshot(path=str(ARTIFACTS / f"console-{name}-glance.png"))
    await page.screenshot(path=str(ARTIFACTS / f"console-{name}.png"), full_page=True)
    await page.set_viewport_size({"width": 390, "height": 844})
    # The page itself never scrolls sideways (a wide table scrolls inside its own box).
    assert await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    await page.screenshot(path=str(ARTIFACTS / f"console-{name}-phone.png"), full_page=True)
    await page.set_viewport_size({"width": 1280, "height": 800})
