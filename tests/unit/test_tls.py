"""One verifying TLS context per process, shared by the HTTPS clients."""

from __future__ import annotations

import random
import ssl

from edgeproxy.aws.dynamodb import DynamoClient
from edgeproxy.aws.session import DeferredSession
from edgeproxy.clients import store_endpoint, store_options
from edgeproxy.settings import Settings
from edgeproxy.tls import verified_context
from edgeproxy.upstream.transport import AiohttpTransport


def test_the_context_verifies_certificates_and_host_names() -> None:
    context = verified_context()
    assert context.verify_mode is ssl.CERT_REQUIRED
    assert context.check_hostname
    assert context.cert_store_stats()["x509_ca"] > 0  # certifi's bundle is loaded


async def test_the_upstream_client_connects_with_the_shared_context() -> None:
    transport = AiohttpTransport()
    session = transport._open()
    try:
        # Built once: a second client (the store's) pays nothing for its CA bundle.
        assert session.connector is not None
        assert session.connector._ssl is verified_context()  # type: ignore[attr-defined]
    finally:
        await session.close()


async def test_the_store_client_connects_with_the_shared_context() -> None:
    environ = {"AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "secret"}
    settings = Settings(region="eu-west-1")
    client = await DynamoClient.open(
        DeferredSession(environ),
        settings.region,
        store_endpoint(settings),  # https, the region's
        store_options(settings),
        random.Random(0).random,
    )
    try:
        assert client._http.tls is verified_context()
    finally:
        await client.close()
