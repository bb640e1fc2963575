"""``gateway.alerts``' settings: the webhook URL's check and the secret's reference."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from edgeproxy.config.alerts import AlertSettings, webhook_problem
from edgeproxy.config.egress import EgressSettings


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
