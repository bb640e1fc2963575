"""The scheduled jobs as users meet them locally: `edgeproxy job ...` and make run's schedule."""

from __future__ import annotations

import json

import pytest

from edgeproxy import cli
from edgeproxy.routing.snapshot import credential_key
from edgeproxy_dev.dynamo_server import DUMMY_CREDENTIALS
from edgeproxy_dev.mock_upstream import MockUpstream
from edgeproxy_dev.runner import local_session, local_settings
from edgeproxy_dev.schedule import Schedule
from tests.fixtures.gateway import store
from tests.fixtures.table import TableView, wait_for
from tests.handlers.expectations import handler_config


@pytest.fixture
def job_env(
    monkeypatch: pytest.MonkeyPatch,
    dynamo_endpoint: str,
    gateway_table: str,
    upstream_a: MockUpstream,
) -> None:
    store(dynamo_endpoint, gateway_table, handler_config(upstream_a))
    for name, value in {
        "EDGEPROXY_DYNAMODB_ENDPOINT": dynamo_endpoint,
        "EDGEPROXY_TABLE": gateway_table,
        "EDGEPROXY_CRED_MOCK_KEY": "sk-mock",
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": DUMMY_CREDENTIALS["aws_access_key_id"],
        "AWS_SECRET_ACCESS_KEY": DUMMY_CREDENTIALS["aws_secret_access_key"],
    }.items():
        monkeypatch.setenv(name, value)


def test_edgeproxy_job_runs_one_pass_of_each_job(
    job_env: None, capsys: pytest.CaptureFixture[str], table: TableView
) -> None:
    assert cli.main(["job", "quota-refresh"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1]) == {"failed": [], "refreshed": 1}
    assert cli.main(["job", "health"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1]) == {"scored": 2}
    assert table.health_samples("a") == 0  # no traffic yet: an explicit no-data item


def test_make_runs_schedule_runs_both_jobs_in_the_background(
    job_env: None, dynamo_endpoint: str, gateway_table: str, table: TableView
) -> None:
    settings = local_settings(dynamo_endpoint, gateway_table)
    with Schedule(settings, local_session(), interval_s=3600):
        # The first pass starts at once; wait for what it writes, not for time.
        wait_for(lambda: table.health_samples("a"), lambda s: s is not None, "a health item")
        wait_for(
            lambda: table.quota_remaining(credential_key("env:EDGEPROXY_CRED_MOCK_KEY")),
            lambda remaining: remaining == 1000,
            "the mock's quota stored",
        )
