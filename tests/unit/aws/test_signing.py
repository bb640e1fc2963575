"""``SignatureV4`` signs exactly as botocore's ``SigV4Auth`` does, for the store's requests."""

from __future__ import annotations

import calendar
import time

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from edgeproxy.aws.signing import SignatureV4, host_of

HEADERS = {
    "Content-Type": "application/x-amz-json-1.0",
    "X-Amz-Target": "DynamoDB_20120810.BatchGetItem",
}
BODY = b'{"RequestItems":{"t":{"Keys":[{"pk":{"S":"a"},"sk":{"S":"b"}}]}}}'


def botocore_headers(credentials: Credentials, region: str, url: str) -> dict[str, str]:
    request = AWSRequest(method="POST", url=url, data=BODY, headers=dict(HEADERS))
    SigV4Auth(credentials, "dynamodb", region).add_auth(request)
    return dict(request.headers.items())


@pytest.mark.parametrize(
    ("url", "token"),
    [
        ("https://dynamodb.eu-west-1.amazonaws.com", None),
        # Lambda's environment credentials carry a session token: it is signed too.
        ("https://dynamodb.eu-west-1.amazonaws.com", "IQoJb3JpZ2luX2VjE//token+with/chars="),
        ("http://127.0.0.1:8123", "tok"),
    ],
)
def test_the_signature_is_botocores(url: str, token: str | None) -> None:
    credentials = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", token)
    expected = botocore_headers(credentials, "eu-west-1", url)
    now = calendar.timegm(time.strptime(expected["X-Amz-Date"], "%Y%m%dT%H%M%SZ"))

    signer = SignatureV4(credentials, "eu-west-1", "dynamodb", url)
    ours = signer.sign(credentials.get_frozen_credentials(), BODY, HEADERS, now)

    assert ours["Authorization"] == expected["Authorization"]
    assert ours["X-Amz-Date"] == expected["X-Amz-Date"]
    assert ours.get("X-Amz-Security-Token") == expected.get("X-Amz-Security-Token")


def test_the_signing_key_follows_the_date_and_the_secret() -> None:
    first = Credentials("AKID", "secret-one")
    second = Credentials("AKID", "secret-two")
    signer = SignatureV4(first, "us-east-1", "dynamodb", "https://dynamodb.us-east-1.amazonaws.com")
    day = 1_700_000_000.0
    a = signer.sign(first.get_frozen_credentials(), BODY, HEADERS, day)
    b = signer.sign(second.get_frozen_credentials(), BODY, HEADERS, day)  # rotated secret
    c = signer.sign(first.get_frozen_credentials(), BODY, HEADERS, day + 86_400)
    assert len({a["Authorization"], b["Authorization"], c["Authorization"]}) == 3
    assert signer.sign(first.get_frozen_credentials(), BODY, HEADERS, day) == a


def test_the_host_omits_default_ports() -> None:
    assert (
        host_of("https://dynamodb.us-east-1.amazonaws.com:443")
        == "dynamodb.us-east-1.amazonaws.com"
    )
    assert host_of("http://127.0.0.1:8000") == "127.0.0.1:8000"
