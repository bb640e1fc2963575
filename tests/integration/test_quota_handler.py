"""The quota refresh's Lambda handler fails its invocation when a source fails.

A scheduled run that returns normally is a success to Lambda: no Errors
metric, no JobFailuresAlarm, nothing on the on-failure destination. So the
handler stores what every healthy source says, records each failure beside
the last good readings, and then raises.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgeproxy import cli
from edgeproxy.errors import QuotaRefreshFailed
from edgeproxy.jobs.entry import build_quota_handler
from edgeproxy.routing.snapshot import credential_key
from edgeproxy.state import keys
from edgeproxy_dev.dynamo_server import DUMMY_CREDENTIALS
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.gateway import store
from tests.fixtures.table import TableView
from tests.handlers.expectations import handler_config

HEALTHY = credential_key("env:EDGEPROXY_CRED_MOCK_KEY")
BROKEN = credential_key("env:EDGEPROXY_CRED_BROKEN_QUOTA_KEY")
EVENT = json.loads((Path(__file__).parents[2] / "events" / "quota_refresh.json").read_text())


class Context:
    function_name = "edgeproxy-quota-test"
    memory_limit_in_mb = 256
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:edgeproxy-quota-test"
    aws_request_id = "quota-test"


@pytest.fixture
def quota_env(
    monkeypatch: pytest.MonkeyPatch,
    dynamo_endpoint: str,
    gateway_table: str,
    upstream_a: MockUpstream,
) -> None:
    """The handler tests' configuration plus a second source whose answer has no number."""
    document = handler_config(upstream_a)
    document["quota_sources"].append(
        {
            "name": "broken",
            "fetcher": "json",
            "credential": "env:EDGEPROXY_CRED_BROKEN_QUOTA_KEY",
            "params": {"url": upstream_a.base_url + "/quota", "remaining": "data.absent"},
        }
    )
    store(dynamo_endpoint, gateway_table, document)
    for name, value in {
        "EDGEPROXY_DYNAMODB_ENDPOINT": dynamo_endpoint,
        "EDGEPROXY_TABLE": gateway_table,
        "EDGEPROXY_CRED_MOCK_KEY": "sk-mock",
        "EDGEPROXY_CRED_BROKEN_QUOTA_KEY": "sk-broken-quota",
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": DUMMY_CREDENTIALS["aws_access_key_id"],
        "AWS_SECRET_ACCESS_KEY": DUMMY_CREDENTIALS["aws_secret_access_key"],
    }.items():
        monkeypatch.setenv(name, value)


def test_a_failed_source_fails_the_invocation_after_the_others_are_stored(
    quota_env: None, table: TableView
) -> None:
    handler = build_quota_handler()
    try:
        with pytest.raises(QuotaRefreshFailed) as raised:
            handler(EVENT, Context())
    finally:
        handler.close()
    assert raised.value.result == {"refreshed": 1, "failed": ["broken"]}
    assert "broken" in str(raised.value)
    assert "sk-broken-quota" not in str(raised.value)
    # The healthy source was stored, the failure recorded beside the (absent) readings.
    assert table.quota_remaining(HEALTHY) == 1000
    failure = table._get(keys.quota_key(BROKEN))
    assert failure is not None
    assert "matched no number" in failure["error"]["S"]


def test_edgeproxy_job_prints_what_a_failed_run_did_and_exits_1(
    quota_env: None, capsys: pytest.CaptureFixture[str], table: TableView
) -> None:
    assert cli.main(["job", "quota-refresh"]) == 1
    printed = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert printed == {"failed": ["broken"], "refreshed": 1}
    assert table.quota_remaining(HEALTHY) == 1000
