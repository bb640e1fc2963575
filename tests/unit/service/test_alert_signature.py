"""The budget-alert webhook's signature (``service/alerts/signature``): over the raw body."""

from __future__ import annotations

from edgeproxy.service.alerts.signature import sign, verify


def test_signature_is_over_the_raw_body() -> None:
    header = sign(b"s", 1700000000, b'{"a":1}')
    assert header.startswith("t=1700000000,v1=")
    assert verify(b"s", header, b'{"a":1}')
    assert not verify(b"s", header, b'{"a":2}')
