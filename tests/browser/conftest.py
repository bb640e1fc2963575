"""One headless Chromium for every browser test: Debian's ``chromium``, driven by Playwright.

No browser is downloaded (never ``playwright install``): the tests drive the
system's ``/usr/bin/chromium`` (``EDGEPROXY_CHROMIUM`` to name another), which
``make test`` installs when it is missing (infra/test-deps.sh). Without it these tests fail, with a
message saying so; they are never skipped. The flags keep Chromium from
reaching out on its own (this machine's network refuses it anyway).

The async API, on the suite's one event loop: the sync API would mark the
thread's loop as running for as long as it lives, and break every
``asyncio.run`` of the fixtures. Blocking calls in a test (starting a
gateway, a chat request) go through ``asyncio.to_thread`` or simply block
the loop for a moment; the browser runs on regardless.

Each test gets a fresh context (its own session storage) and a ``Watched``
page that collects console errors and uncaught exceptions; the test ends
by asserting there were none.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.async_api import Browser, ConsoleMessage, Page, Request, async_playwright, expect

CHROMIUM = Path(os.environ.get("EDGEPROXY_CHROMIUM", "/usr/bin/chromium"))
# How long a page action or an ``expect`` waits for its condition (Playwright's expect
# defaults to 5 s, which a loaded CI machine's page refresh can pass): a deadline, not a sleep.
DEADLINE_MS = 15_000
expect.set_options(timeout=DEADLINE_MS)
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Screenshots: $EDGEPROXY_SCREENSHOTS, else tests/artifacts/ (gitignored; CI may keep them).
ARTIFACTS = Path(
    os.environ.get("EDGEPROXY_SCREENSHOTS") or Path(__file__).resolve().parents[1] / "artifacts"
)


@pytest.fixture(scope="package")
async def browser() -> AsyncIterator[Browser]:
    """One browser for every test in tests/browser/ (launched once: about a second)."""
    if not os.path.exists(CHROMIUM):  # noqa: ASYNC240 - once per session, before the loop has work
        pytest.fail(
            f"no Chromium at {CHROMIUM}: the status page's browser tests need Debian's "
            "chromium (apt-get install -y chromium; make test installs it), "
            "or EDGEPROXY_CHROMIUM naming one",
            pytrace=False,
        )
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=FLAGS
        )
        try:
            yield launched
        finally:
            await launched.close()


@dataclass
class Watched:
    """A page, and what its script and the browser said while the test ran."""

    page: Page
    errors: list[str] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)

    def problems(self, allowed: tuple[str, ...] = ()) -> list[str]:
        """Console errors and uncaught exceptions, except those starting with ``allowed``."""
        return [e for e in self.errors if not e.startswith(allowed)]


@pytest.fixture
async def watched(browser: Browser) -> AsyncIterator[Watched]:
    """A fresh context and page (desktop size) that records console errors."""
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    page.set_default_timeout(DEADLINE_MS)
    seen = Watched(page)

    def console(message: ConsoleMessage) -> None:
        if message.type in ("error", "warning"):
            seen.errors.append(f"console {message.type}: {message.text}")

    page.on("console", console)
    page.on("pageerror", lambda error: seen.errors.append(f"page error: {error}"))
    page.on("request", lambda request: seen.requests.append(request))
    try:
        yield seen
    finally:
        await context.close()
