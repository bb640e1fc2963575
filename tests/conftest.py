"""Shared fixtures: the clock, the embedded DynamoDB, mock upstreams, running gateways.

The session also runs a secrets watch (``tests/fixtures/leaks.py``): every log
line and every response of an in-process gateway is scanned for the mock
upstream key and every client or admin key a test presented. Any hit fails
the session at its end, and so does a full run whose watch saw too little to
mean anything.
"""

from __future__ import annotations

import pytest

from tests.fixtures import leaks

pytest_plugins = [
    "tests.fixtures.secrets",  # first: the gateway fixtures import it
    "tests.fixtures.clock",
    "tests.fixtures.dynamo",
    "tests.fixtures.table",
    "tests.fixtures.upstream",
    "tests.fixtures.gateway",
]

# A full run sees thousands of both; a watch below these saw (almost) nothing.
FULL_RUN_TESTS = 800
MIN_BODIES = 300
MIN_LOG_LINES = 100


def pytest_configure(config: pytest.Config) -> None:
    leaks.install()


@pytest.fixture(autouse=True)
def _secrets_watch() -> None:
    leaks.install()  # again: a test may have rebuilt the package's logging (Lambda handler)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    watch = leaks.WATCH
    problems = list(watch.hits)
    full_run = session.testscollected >= FULL_RUN_TESTS and not session.config.option.keyword
    if full_run and (watch.bodies < MIN_BODIES or watch.log_lines < MIN_LOG_LINES):
        problems.append(
            f"the secrets watch saw only {watch.bodies} responses and "
            f"{watch.log_lines} log lines (expected >= {MIN_BODIES} / {MIN_LOG_LINES})"
        )
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(
            f"secrets watch: {watch.bodies} responses, {watch.log_lines} log lines, "
            f"{len(watch.secrets)} secrets, {len(watch.hits)} hits"
        )
        for problem in problems[:20]:
            reporter.write_line(f"SECRET LEAK: {problem}", red=True)
    if problems:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
