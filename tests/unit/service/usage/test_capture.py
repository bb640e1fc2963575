"""Prompts and answers in the request log (``service/usage/capture.py``)."""

from __future__ import annotations

import pytest

from edgeproxy.config.request_log import RequestLogSettings
from edgeproxy.service.usage.capture import bounded, kept, redacted, stream_text


@pytest.mark.parametrize(
    "secret",
    [
        "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
        "sk-ant-api03-abcdefghijklmnop",
        "ep-45gT9ltk05W9eq0Fq9tWDh6KzvZQHM3LC40aYl7R4rQ",
        "AKIAIOSFODNN7EXAMPLE",
        "Bearer abcdef0123456789",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV",
    ],
)
def test_credentials_are_redacted(secret: str) -> None:
    text = redacted(f"use {secret} please")
    assert secret not in text
    assert "[redacted]" in text
    assert text.startswith("use ")


def test_assigned_secrets_keep_their_name() -> None:
    text = redacted('{"api_key": "abcd1234efgh", "password=hunter2"}')
    assert "abcd1234efgh" not in text
    assert "hunter2" not in text
    assert '"api_key": "[redacted]"' in text


def test_ordinary_text_is_left_alone() -> None:
    plain = "Skipping the task: a keyword is not a key, nor is sk-short."
    assert redacted(plain) == plain


def test_bounded_cuts_at_a_byte_limit_never_inside_a_character() -> None:
    assert bounded("short", 100) == "short"
    cut = bounded("é" * 100, 51)
    assert len(cut.encode()) <= 51
    assert cut.endswith("...[truncated]")
    assert set(cut.removesuffix("...[truncated]")) == {"é"}


def test_only_opted_in_pools_keep_anything() -> None:
    settings = RequestLogSettings(bodies=["fast-chat"], body_bytes=64)
    body = {"messages": [{"role": "user", "content": "hi sk-abcdefghijklmnopqrstuvwx"}]}
    assert kept(settings, "gpt-4o", body) is None
    text = kept(settings, "fast-chat", body)
    assert text is not None
    assert "sk-abcdef" not in text
    assert len(text.encode()) <= 64
    assert kept(RequestLogSettings(), "fast-chat", body) is None  # the default keeps nothing


def test_stream_text_reads_content_deltas() -> None:
    chunk = {"choices": [{"delta": {"content": "Hel"}}, {"delta": {"role": "assistant"}}]}
    assert stream_text(chunk) == "Hel"
    assert stream_text({"choices": None}) == ""
