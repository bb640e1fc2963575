"""Budget alert rules (pure) and the webhook URL's check."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from edgeproxy.config.alerts import AlertSettings, webhook_problem
from edgeproxy.config.egress import EgressSettings
from edgeproxy.routing.alerts import MAX_ATTEMPTS, crossed, retry_at
from edgeproxy.service.alerts.signature import sign, verify


def test_crossing_counts_each_threshold_once_on_the_settlement_that_reaches_it() -> None:
    assert crossed(7.9, 8.0, 10.0, 0.8) == (0.8,)
    assert crossed(8.0, 8.1, 10.0, 0.8) == ()
    assert crossed(7.0, 12.0, 10.0, 0.8) == (0.8, 1.0)
    assert crossed(0.0, 5.0, None, 0.8) == ()
    assert crossed(5.0, 4.0, 10.0, 0.8) == ()  # a release of an estimate never alerts


def test_retries_back_off_and_give_up() -> None:
    assert retry_at(1, 0.0) == 30.0
    assert retry_at(2, 0.0) == 60.0
    assert retry_at(30, 0.0) is None
    assert retry_at(MAX_ATTEMPTS - 1, 0.0) == 3600.0


def test_signature_is_over_the_raw_body() -> None:
    header = sign(b"s", 1700000000, b'{"a":1}')
    assert header.startswith("t=1700000000,v1=")
    assert verify(b"s", header, b'{"a":1}')
    assert not verify(b"s", header, b'{"a":2}')


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("https://10.0.0.5/hook", "egress"),
        ("https://169.254.169.254/latest", "egress"),
        ("https://127.0.0.1/hook", "egress"),
        ("http://hooks.example.com/x", "https"),
        ("https://hooks.example.com/x\r\nx-a: b", "control"),
        ("https://u:p@hooks.example.com/x", "credentials"),
        ("ftp://hooks.example.com/x", "https"),
    ],
)
def test_hostile_webhook_urls_are_refused_naming_the_field(url: str, words: str) -> None:
    problem = webhook_problem(url, EgressSettings())
    assert problem is not None
    assert "webhook_url" in problem
    assert words in problem


def test_a_public_https_webhook_and_an_allowed_loopback_one_pass() -> None:
    assert webhook_problem("https://hooks.example.com/x", EgressSettings()) is None
    allow = EgressSettings(allow=["127.0.0.0/8"])
    assert webhook_problem("http://127.0.0.1:9/hook", allow) is None


def test_settings_refuse_a_secret_that_is_not_a_credential_reference() -> None:
    with pytest.raises(ValidationError, match="webhook_secret_ref"):
        AlertSettings(webhook_secret_ref="plaintext-secret")
    with pytest.raises(ValidationError, match="webhook_url"):
        AlertSettings(webhook_url="https://a.example/\x00")
