"""Shared fixtures: the clock, the embedded DynamoDB, mock upstreams, running gateways.

The session also runs a secrets watch (``tests/fixtures/leaks.py``): every log
line and every response of an in-process gateway is scanned for the mock
upstream key and every client or admin key a test presented. Any hit fails
the session at its end, and so does a full run whose watch saw too little to
mean anything.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.fixtures import leaks, tls

pytest_plugins = [
    "tests.fixtures.secrets",  # first: the gateway fixtures import it
    "tests.fixtures.clock",
    "tests.fixtures.dynamo",
    "tests.fixtures.table",
    "tests.fixtures.upstream",
    "tests.fixtures.gateway",
    "tests.fixtures.failover",
    "tests.fixtures.llama",
]

# A full run sees thousands of both; a watch below these saw (almost) nothing.
FULL_RUN_TESTS = 800
MIN_BODIES = 300
MIN_LOG_LINES = 100


def pytest_configure(config: pytest.Config) -> None:
    leaks.install()
    tls.install()


@pytest.fixture(autouse=True)
def _secrets_watch() -> None:
    leaks.install()  # again: a test may have rebuilt the package's logging (Lambda handler)


# What each xdist worker's watch saw, handed over as it went down (controller only).
_WORKERS: list[dict[str, Any]] = []


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    seen = getattr(node, "workeroutput", {}).get("secrets_watch")
    if seen is not None:
        _WORKERS.append(seen)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    watch = leaks.WATCH
    mine = {
        "bodies": watch.bodies,
        "log_lines": watch.log_lines,
        "secrets": len(watch.secrets),
        "hits": list(watch.hits),
    }
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        # An xdist worker: the controller judges the whole run from every worker's counts.
        workeroutput["secrets_watch"] = mine
        return
    seen = [mine, *_WORKERS]
    bodies = sum(s["bodies"] for s in seen)
    log_lines = sum(s["log_lines"] for s in seen)
    problems = [hit for s in seen for hit in s["hits"]]
    # The whole suite: no paths or keywords given (tests/unit alone is large but sees no traffic).
    full_run = (
        session.config.args_source is pytest.Config.ArgsSource.TESTPATHS
        and session.testscollected >= FULL_RUN_TESTS
        and not session.config.option.keyword
    )
    if full_run and (bodies < MIN_BODIES or log_lines < MIN_LOG_LINES):
        problems.append(
            f"the secrets watch saw only {bodies} responses and "
            f"{log_lines} log lines (expected >= {MIN_BODIES} / {MIN_LOG_LINES})"
        )
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(
            f"secrets watch: {bodies} responses, {log_lines} log lines, "
            f"{max(s['secrets'] for s in seen)} secrets (most in one process), "
            f"{len(problems)} problems"
        )
        for problem in problems[:20]:
            reporter.write_line(f"SECRET LEAK: {problem}", red=True)
    if problems:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
