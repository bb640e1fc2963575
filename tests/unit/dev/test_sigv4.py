"""The SigV4 signer users put under the openai SDK for AuthMode=iam deployments."""

from __future__ import annotations

import httpx
from botocore.credentials import Credentials

from edgeproxy_dev.sigv4 import SigV4

CREDENTIALS = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")


def signed(request: httpx.Request) -> httpx.Request:
    flow = SigV4("execute-api", "eu-west-1", CREDENTIALS).auth_flow(request)
    return next(flow)


def test_the_request_carries_a_sigv4_signature_and_keeps_the_client_key() -> None:
    request = httpx.Request(
        "POST",
        "https://abc.execute-api.eu-west-1.amazonaws.com/prod/v1/chat/completions",
        headers={
            "authorization": "Bearer unused",
            "x-api-key": "ep-client",
            "content-type": "application/json",
        },
        content=b'{"model": "fast-chat"}',
    )
    out = signed(request)
    auth = out.headers["authorization"]
    assert auth.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/eu-west-1/execute-api/aws4_request" in auth
    assert "SignedHeaders=content-type;host;x-amz-date;x-api-key" in auth
    assert out.headers["x-api-key"] == "ep-client"
    assert "x-amz-date" in out.headers


def test_the_signature_covers_the_body() -> None:
    def signature(body: bytes) -> str:
        request = httpx.Request(
            "POST", "https://abc.lambda-url.eu-west-1.on.aws/v1/x", content=body
        )
        return signed(request).headers["authorization"].rsplit("Signature=", 1)[1]

    assert signature(b"a") != signature(b"b")
