"""One verifying TLS context per process, shared by the HTTPS clients; none built for nothing."""

from __future__ import annotations

import json
import os
import random
import ssl
import subprocess
import sys
from pathlib import Path

import certifi
import pytest

import edgeproxy
from edgeproxy.aws.dynamodb import DynamoClient
from edgeproxy.aws.session import DeferredSession
from edgeproxy.clients import store_endpoint, store_options
from edgeproxy.entrypoint import lean_init
from edgeproxy.settings import Settings
from edgeproxy.tls import verified_context
from edgeproxy.upstream.egress import guarded_connector
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


async def test_the_alert_webhook_connects_with_the_shared_context() -> None:
    connector = guarded_connector()  # service/alerts/webhook.py's
    try:
        # Not aiohttp's default context, which lean_init leaves without a CA.
        assert connector._ssl is verified_context()  # type: ignore[attr-defined]
    finally:
        await connector.close()


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


ROOT = Path(__file__).resolve().parents[2]
PACKAGE_ROOT = Path(edgeproxy.__file__).resolve().parents[1]
CHECK_INIT = """
import json, os, sys
import app
import aiohttp.connector as connector
from edgeproxy.tls import verified_context
print(json.dumps({
    "aiohttp_default_cas": connector._SSL_CONTEXT_VERIFIED.cert_store_stats()["x509_ca"],
    "verified_cas": verified_context().cert_store_stats()["x509_ca"],
    "ssl_cert_file": os.environ.get("SSL_CERT_FILE"),
    "ssl_cert_dir": os.environ.get("SSL_CERT_DIR", "unset"),
}))
"""


@pytest.mark.parametrize("function", ["proxy", "stream"])
def test_a_cold_start_loads_no_ca_bundle_for_aiohttps_unused_defaults(function: str) -> None:
    """``lean_init`` around ``functions/<function>/app.py``: aiohttp's import-time default
    contexts trust nothing (edgeproxy never uses them; a client that did would fail its
    handshake), the shared context still has certifi's bundle, and the environment is as
    before."""
    env = {
        "AWS_REGION": "us-east-1",
        "EDGEPROXY_TABLE": "t",
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(PACKAGE_ROOT),
        "SSL_CERT_FILE": certifi.where(),  # without lean_init, aiohttp's default loads it
    }
    done = subprocess.run(  # noqa: S603 - our own interpreter
        [sys.executable, "-c", CHECK_INIT],
        cwd=ROOT / "functions" / function,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["aiohttp_default_cas"] == 0
    assert seen["verified_cas"] > 0
    assert seen["ssl_cert_file"] == certifi.where()
    assert seen["ssl_cert_dir"] == "unset"


def test_lean_init_puts_the_environment_back_even_on_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", "/some/bundle.pem")
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    seen: dict[str, object] = {}

    def failing_init() -> None:
        with lean_init():
            seen["file"], seen["dir"] = os.environ["SSL_CERT_FILE"], os.environ["SSL_CERT_DIR"]
            seen["cas"] = ssl.create_default_context().cert_store_stats()["x509_ca"]
            raise RuntimeError("init failed")

    with pytest.raises(RuntimeError):
        failing_init()
    assert seen == {"file": os.devnull, "dir": os.devnull, "cas": 0}
    assert os.environ["SSL_CERT_FILE"] == "/some/bundle.pem"
    assert "SSL_CERT_DIR" not in os.environ
