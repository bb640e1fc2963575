"""``make run``: a working gateway on a laptop, with nothing but this repository.

Starts the embedded DynamoDB (linearizable moto), creates the state table
from template.yaml, starts the mock upstreams the example configuration
points at, stores the configuration, and serves the same ASGI app as Lambda
under uvicorn on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import aioboto3
import uvicorn

from edgeproxy.api.app import create_app
from edgeproxy.config.loader import load_config_file, to_document
from edgeproxy.config.models import GatewayConfig
from edgeproxy.local.dynamo_server import (
    DUMMY_CREDENTIALS,
    REGION,
    EmbeddedDynamo,
    client_kwargs,
    create_table,
)
from edgeproxy.local.mock_upstream import MockUpstream
from edgeproxy.runtime import build_gateway, open_store
from edgeproxy.service.gateway import Gateway
from edgeproxy.settings import Settings
from edgeproxy.state.schema import default_template_path

TABLE = "edgeproxy-local"
MOCK_KEY = "sk-mock-upstream"  # what the mocks expect; referenced as env:EDGEPROXY_MOCK_KEY
ALWAYS_DOWN = {"always-down"}  # deployments whose mock answers 503 forever (the demo)


def local_session() -> aioboto3.Session:
    """An aioboto3 session with dummy credentials for the embedded server."""
    return aioboto3.Session(region_name=REGION, **DUMMY_CREDENTIALS)


def local_settings(endpoint_url: str, table: str = TABLE) -> Settings:
    """Settings for a gateway on the embedded DynamoDB (the environment still supplies keys)."""
    environ = {**os.environ, "EDGEPROXY_MOCK_KEY": MOCK_KEY}
    environ.update(
        EDGEPROXY_DYNAMODB_ENDPOINT=endpoint_url, EDGEPROXY_TABLE=table, AWS_REGION=REGION
    )
    return Settings.from_env(environ)


async def store_config(settings: Settings, config: GatewayConfig) -> int:
    """Write ``config`` to the table; returns its version."""
    async with contextlib.AsyncExitStack() as stack:
        store = await open_store(settings, stack, local_session())
        return await store.save_config(to_document(config))


@contextlib.contextmanager
def mock_upstreams(config: GatewayConfig) -> Iterator[list[MockUpstream]]:
    """Start one mock per loopback port the configuration names."""
    ports: dict[int, set[str]] = {}
    for dep in config.deployments:
        url = urlsplit(dep.base_url)
        if url.hostname == "127.0.0.1" and url.port:
            ports.setdefault(url.port, set()).add(dep.id)
    mocks = []
    try:
        for port, ids in sorted(ports.items()):
            mock = MockUpstream(f"mock-{port}", port, api_key=MOCK_KEY).start()
            if ids <= ALWAYS_DOWN:
                mock.set_faults([], persistent={"status": 503})
            mocks.append(mock)
        yield mocks
    finally:
        for mock in mocks:
            mock.stop()


def _banner(port: int) -> str:
    base = f"http://127.0.0.1:{port}"
    auth = '-H "Authorization: Bearer sk-local-client"'
    body = '{"model": "fast-chat", "messages": [{"role": "user", "content": "Hello!"}]}'
    stream = body[:-1] + ', "stream": true}'
    return "\n".join(
        [
            f"edgeproxy is serving on {base}",
            "",
            "Try it:",
            f"  curl -s {base}/v1/chat/completions {auth} -H 'Content-Type: application/json' -d '{body}'",
            f"  curl -sN {base}/v1/chat/completions {auth} -H 'Content-Type: application/json' -d '{stream}'",
            "",
            "Watch a failover (first deployment always answers 503):",
            f"  curl -s {base}/v1/chat/completions {auth} -H 'x-unified-routing-metadata: true' "
            "-H 'Content-Type: application/json' "
            '-d \'{"model": "demo-failover", "messages": [{"role": "user", "content": "hi"}]}\'',
            f"  curl -s {base}/v1/models/demo-failover/deployments "
            '-H "Authorization: Bearer sk-local-admin"',
            "",
        ]
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Run edgeproxy locally.")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--config", type=Path, default=Path("infra/config.example.yaml"))
    args = parser.parse_args(argv)
    config = load_config_file(args.config)
    with EmbeddedDynamo() as dynamo, mock_upstreams(config):
        create_table(dynamo.endpoint_url, TABLE, default_template_path())
        settings = local_settings(dynamo.endpoint_url)
        asyncio.run(store_config(settings, config))

        async def gateway() -> Gateway:
            return await build_gateway(settings, session=local_session())

        print(_banner(args.port), flush=True)
        print(f"(embedded DynamoDB: {client_kwargs(dynamo.endpoint_url)['endpoint_url']})")
        uvicorn.run(create_app(gateway), host="127.0.0.1", port=args.port, log_level="info")


if __name__ == "__main__":
    main()
