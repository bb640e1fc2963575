"""Sign requests to an ``AuthMode=iam`` deployment (SigV4) while the client key rides in ``x-api-key``.

With IAM authorization the ``Authorization`` header carries the SigV4
signature, so the gateway's client key moves to ``x-api-key`` (the gateway
reads either). The stock openai SDK works unchanged through an httpx client
that signs each request:

    import httpx, openai
    from edgeproxy_dev.sigv4 import SigV4

    client = openai.OpenAI(
        base_url="https://abc.execute-api.eu-west-1.amazonaws.com/prod/v1",
        api_key="unused-with-iam",
        default_headers={"x-api-key": os.environ["EDGEPROXY_CLIENT_KEY"]},
        http_client=httpx.Client(auth=SigV4("execute-api", "eu-west-1")),
    )

Use service ``execute-api`` for the HTTP API (ApiUrl) and ``lambda`` for the
streaming Function URL (StreamUrl). Credentials come from boto3's default chain.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import boto3
import httpx
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

# Signed headers: what API Gateway and Function URLs need, nothing a proxy may rewrite.
SIGNED = ("content-type", "x-api-key")


class SigV4(httpx.Auth):
    """An httpx auth flow that SigV4-signs each request for ``service`` in ``region``."""

    requires_request_body = True

    def __init__(self, service: str, region: str, credentials: Any | None = None) -> None:
        self._service = service
        self._region = region
        self._credentials = credentials or boto3.Session().get_credentials()

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        headers = {name: request.headers[name] for name in SIGNED if name in request.headers}
        signed = AWSRequest(
            method=request.method, url=str(request.url), data=request.content, headers=headers
        )
        SigV4Auth(self._credentials, self._service, self._region).add_auth(signed)
        request.headers.pop("authorization", None)  # the SDK's Bearer header gives way
        for name, value in signed.headers.items():
            request.headers[name] = value
        yield request
