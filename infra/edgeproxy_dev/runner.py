"""``make run``: a working gateway on a laptop, with nothing but this repository.

Starts the embedded DynamoDB (linearizable moto in a process of its own,
kept-alive connections; Ctrl-C stops it with the rest), creates the state table
from template.yaml, starts the mock upstreams the example configuration
points at (each on its port, or a free one if that is taken, the configuration
moved to it), stores the configuration, mints the keys (a bootstrap admin key,
passed as the credential reference ``env:EDGEPROXY_LOCAL_ADMIN_KEY`` as the
template passes an SSM parameter, and one ``free`` client key in the table),
prints them, runs the scheduled jobs (health, quota refresh) every minute in
the background, and serves the same ASGI app as Lambda under uvicorn on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import json
import os
import secrets
import socket
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import urlsplit

import aioboto3
import uvicorn

from edgeproxy.api.app import create_app
from edgeproxy.config.egress import allow_local_loopback, local_loopback
from edgeproxy.config.loader import load_config_file, parse_config, to_document
from edgeproxy.config.models import GatewayConfig
from edgeproxy.config.roles import Role
from edgeproxy.runtime import build_gateway, open_store, process_rng
from edgeproxy.service.admin.config_edit import ConfigEditor
from edgeproxy.service.gateway import Gateway
from edgeproxy.service.keys import mint_key
from edgeproxy.settings import Settings
from edgeproxy_dev.aws import DUMMY_CREDENTIALS, REGION
from edgeproxy_dev.clock import Clock, clock_control
from edgeproxy_dev.schedule import Schedule
from edgeproxy_dev.serving import BACKLOG, server_config
from edgeproxy_dev.template import default_template_path

if TYPE_CHECKING:
    from edgeproxy_dev.mock_upstream import MockUpstream

TABLE = "edgeproxy-local"
MOCK_KEY = "sk-mock-upstream"  # what the mocks expect; referenced as env:EDGEPROXY_CRED_MOCK_KEY
ALWAYS_DOWN = {"always-down"}  # deployments whose mock answers 503 forever (the demo)
ADMIN_KEY_VAR = "EDGEPROXY_LOCAL_ADMIN_KEY"


def local_session() -> aioboto3.Session:
    """An aioboto3 session with dummy credentials for the embedded server."""
    return aioboto3.Session(region_name=REGION, **DUMMY_CREDENTIALS)


def local_settings(endpoint_url: str, table: str = TABLE) -> Settings:
    """Settings for a gateway on the embedded DynamoDB (the environment still supplies keys)."""
    environ = {**os.environ, "EDGEPROXY_CRED_MOCK_KEY": MOCK_KEY}
    environ.update(
        EDGEPROXY_DYNAMODB_ENDPOINT=endpoint_url, EDGEPROXY_TABLE=table, AWS_REGION=REGION
    )
    return Settings.from_env(environ)


async def mint_client_key(settings: Settings, name: str, role: Role = Role.FREE) -> str:
    """Create a client key in the table; returns the key (printed once by ``make run``)."""
    new = mint_key(name, role, time.time())
    async with contextlib.AsyncExitStack() as stack:
        store = await open_store(settings, stack, local_session(), rng=process_rng())
        await store.put_client_key(new.key)
    return new.secret


def with_admin_key(settings: Settings) -> tuple[Settings, str]:
    """``settings`` with a fresh bootstrap admin key behind an ``env:`` reference."""
    admin_key = "ep-" + secrets.token_urlsafe(32)
    environ = {
        **settings.environ,
        ADMIN_KEY_VAR: admin_key,
        "EDGEPROXY_ADMIN_KEY_REF": f"env:{ADMIN_KEY_VAR}",
    }
    return Settings.from_env(environ), admin_key


async def store_config(settings: Settings, config: GatewayConfig) -> int:
    """Write ``config`` to the table (over whatever is stored, audited); returns its version."""
    async with contextlib.AsyncExitStack() as stack:
        store = await open_store(settings, stack, local_session(), rng=process_rng())
        return await ConfigEditor(store, time.time, owner=True).replace(
            config, actor="dev", source="runner"
        )


def _loopback_port(base_url: str | None) -> int | None:
    url = urlsplit(base_url or "")
    return url.port if url.hostname == "127.0.0.1" and url.port else None


@contextlib.contextmanager
def mock_upstreams(config: GatewayConfig) -> Iterator[dict[int, MockUpstream]]:
    """One mock per loopback port the configuration names: on that port, or a free one if taken.

    Yields the mocks by the port the configuration names (``moved`` points the
    configuration at where they listen). So one run keeps the file's ports (a
    copy of the file loaded later still reaches them), and a second run, or a
    run beside another program on one of them, moves instead of failing.
    """
    from edgeproxy_dev.mock_upstream import MockUpstream  # local runs only

    ports: dict[int, set[str]] = {}
    for dep in config.deployments:
        port = _loopback_port(dep.base_url)
        if port:
            ports.setdefault(port, set()).add(dep.id)
    mocks: dict[int, MockUpstream] = {}
    try:
        for port, ids in sorted(ports.items()):
            try:
                mock = MockUpstream(f"mock-{port}", port, api_key=MOCK_KEY).start()
            except OSError as exc:
                if exc.errno != errno.EADDRINUSE:
                    raise
                mock = MockUpstream(f"mock-{port}", 0, api_key=MOCK_KEY).start()
            if ids <= ALWAYS_DOWN:
                mock.set_faults([], persistent={"status": 503})
            mocks[port] = mock
        yield mocks
    finally:
        for mock in mocks.values():
            mock.stop()


def moved(config: GatewayConfig, ports: Mapping[int, int]) -> GatewayConfig:
    """``config`` with each loopback ``base_url`` on a port of ``ports`` moved to its new port."""
    data = json.loads(to_document(config))
    for dep in data["deployments"]:
        port = _loopback_port(dep.get("base_url"))
        if port is not None and port in ports:
            url = urlsplit(dep["base_url"])
            dep["base_url"] = url._replace(netloc=f"127.0.0.1:{ports[port]}").geturl()
    return parse_config(data, "the configuration, its mocks moved")


LOOPBACK_LINE = [
    "Loopback upstreams (a server on this machine: Ollama, vLLM, llama.cpp) are allowed in",
    "this local run, whatever gateway.egress says; a deployed gateway refuses them.",
]


class Banner(NamedTuple):
    """What ``make run`` prints: the keys it minted and where its table is."""

    admin_key: str
    client_key: str
    table: str
    endpoint: str
    mocks: list[str]  # one line per mock upstream: where it listens, which deployments use it
    model: str = "fast-chat"  # the model the examples ask for: one the configuration has
    failover: bool = True  # the configuration has the example's demo-failover pool


EXAMPLE = Path(__file__).resolve().parents[1] / "config.example.yaml"


def _is_example(path: Path) -> bool:
    """Whether ``path`` is the example configuration, whose loopback ports are its mocks'."""
    return path.resolve() == EXAMPLE


def mock_lines(config: GatewayConfig) -> list[str]:
    """One line per loopback upstream of ``config``: its URL and the deployments on it."""
    by_url: dict[str, list[str]] = {}
    for dep in config.deployments:
        if _loopback_port(dep.base_url) and dep.base_url:
            by_url.setdefault(dep.base_url, []).append(dep.id)
    return [f"  {url}  {', '.join(ids)}" for url, ids in sorted(by_url.items())]


def cli_path() -> str:
    """How to run this environment's ``edgeproxy`` from here (``.venv/bin/edgeproxy``)."""
    script = Path(sys.executable).with_name("edgeproxy")
    if not script.exists():
        return "edgeproxy"
    with contextlib.suppress(ValueError):
        return os.path.relpath(script)
    return str(script)


NO_MOCKS = "Mock upstreams: none (not the example configuration; --mocks starts them)"


def _failover_lines(base: str, auth: str, admin_key: str) -> list[str]:
    return [
        "",
        "Watch a failover (first deployment always answers 503):",
        f"  curl -s {base}/v1/chat/completions {auth} -H 'x-unified-routing-metadata: true' "
        "-H 'Content-Type: application/json' "
        '-d \'{"model": "demo-failover", "messages": [{"role": "user", "content": "hi"}]}\'',
        f"  curl -s {base}/v1/models/demo-failover/deployments "
        f'-H "Authorization: Bearer {admin_key}"',
    ]


def _banner(port: int, banner: Banner) -> str:
    base = f"http://127.0.0.1:{port}"
    admin_key, client_key = banner.admin_key, banner.client_key
    cli = cli_path()
    auth = f'-H "Authorization: Bearer {client_key}"'
    body = json.dumps({"model": banner.model, "messages": [{"role": "user", "content": "Hello!"}]})
    stream = body[:-1] + ', "stream": true}'
    return "\n".join(
        [
            f"edgeproxy is serving on {base}",
            f"status page: {base}/admin/ (sign in with the admin key below)",
            "",
            f"admin key:  {admin_key}",
            f"client key: {client_key}",
            "(minted for this run; the admin key is the bootstrap key, the client key a"
            " 'free' key in the table)",
            "",
            "Try it:",
            f"  curl -s {base}/v1/chat/completions {auth} -H 'Content-Type: application/json' -d '{body}'",
            f"  curl -sN {base}/v1/chat/completions {auth} -H 'Content-Type: application/json' -d '{stream}'",
            *(_failover_lines(base, auth, admin_key) if banner.failover else []),
            "",
            f"State table: {banner.table} on the embedded DynamoDB at {banner.endpoint}",
            *(
                [
                    "Mock upstreams (the configuration's ports, or free ones where those were taken):",
                    *banner.mocks,
                ]
                if banner.mocks
                else [NO_MOCKS]
            ),
            *(LOOPBACK_LINE if local_loopback() else []),
            "",
            f"The CLI is {cli} (or: make cli ARGS='...'). Point it at this gateway:",
            f"  export EDGEPROXY_URL={base} EDGEPROXY_ADMIN_KEY={admin_key}",
            f"  {cli} keys create --name my-app --role pro --rpm 60",
            f"  {cli} status",
            "or at the table itself (no gateway needed; any AWS credentials will do):",
            f"  export EDGEPROXY_TABLE={banner.table} EDGEPROXY_DYNAMODB_ENDPOINT={banner.endpoint} "
            "AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local",
            "",
        ]
    )


class PortBusy(Exception):
    """A port ``make run`` needs is taken (the message says which and what to do)."""


def listen(port: int, what: str = "the gateway") -> socket.socket:
    """A listening socket on 127.0.0.1:``port``; ``PortBusy`` if another process has it."""
    # IPPROTO_TCP (not 0) so asyncio sets TCP_NODELAY on accepted connections:
    # without it a response's body waits ~40 ms behind its headers (delayed ACK).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        sock.close()
        if exc.errno != errno.EADDRINUSE:
            raise
        hint = "make run PORT=8081, or --port" if what == "the gateway" else "stop what holds it"
        raise PortBusy(
            f"port {port} ({what}) is already in use, perhaps by another `make run`: {hint}"
        ) from None
    sock.listen(BACKLOG)  # before the banner: whoever reads it may connect at once
    return sock


def serve(
    settings: Settings,
    port: int,
    banner: Banner | None = None,
    clock: Clock | None = None,
    sock: socket.socket | None = None,
) -> None:
    """Serve the gateway on 127.0.0.1:``port`` (0: a free port) until interrupted.

    ``banner``: the keys and table to print with the example commands.
    ``sock``: a socket already listening (``listen``), used instead of ``port``.
    ``clock``: the gateway runs on it, and ``POST /_dev/clock`` moves it (for
    tests that move the time of several gateway processes at once).
    """

    async def gateway() -> Gateway:
        return await build_gateway(
            settings, session=local_session(), clock=clock.now if clock else time.time
        )

    sock = sock or listen(port)
    bound = sock.getsockname()[1]
    print(
        _banner(bound, banner) if banner else f"edgeproxy is serving on http://127.0.0.1:{bound}",
        flush=True,
    )
    app = create_app(gateway)
    config = server_config(
        clock_control(app, clock) if clock else app, log_level="info" if banner else "warning"
    )
    uvicorn.Server(config).run(sockets=[sock])


def main(argv: list[str] | None = None) -> None:
    """``make run`` (and the tests' ``--serve-only`` gateways); a busy port is one line."""
    try:
        _main(argv)
    except PortBusy as exc:
        sys.exit(f"edgeproxy: {exc}")


def _main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Run edgeproxy locally.")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--config", type=Path, default=Path("infra/config.example.yaml"))
    parser.add_argument(
        "--serve-only",
        action="store_true",
        help="serve on an existing table (--dynamo-endpoint, --table); start nothing else",
    )
    parser.add_argument("--dynamo-endpoint", default=None)
    parser.add_argument(
        "--dynamo-port", type=int, default=0, help="port of the embedded DynamoDB (0: a free one)"
    )
    parser.add_argument("--table", default=TABLE)
    parser.add_argument(
        "--mocks",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="start mock upstreams on the configuration's loopback ports "
        "(default: only for the example configuration; never beside your own servers)",
    )
    parser.add_argument(
        "--clock-control",
        action="store_true",
        help='run on a movable clock that POST /_dev/clock {"offset": s} sets (tests only)',
    )
    args = parser.parse_args(argv)
    clock = Clock() if args.clock_control else None
    if args.serve_only:
        if not args.dynamo_endpoint:
            parser.error("--serve-only needs --dynamo-endpoint")
        serve(local_settings(args.dynamo_endpoint, args.table), args.port, clock=clock)
        return
    from edgeproxy_dev.dynamo_server import EmbeddedDynamo, create_table  # local runs only

    # A server on this machine is what a local run is for; before the configuration loads.
    allow_local_loopback()
    config = load_config_file(args.config)
    sock = listen(args.port)  # first: a busy port fails before anything starts
    if args.dynamo_port:  # checked (and let go) before starting: it names its port if taken
        listen(args.dynamo_port, "the embedded DynamoDB").close()
    mocking = args.mocks if args.mocks is not None else _is_example(args.config)
    none: dict[int, MockUpstream] = {}
    upstreams: contextlib.AbstractContextManager[dict[int, MockUpstream]] = (
        mock_upstreams(config) if mocking else contextlib.nullcontext(none)
    )
    with EmbeddedDynamo(port=args.dynamo_port) as dynamo, upstreams as mocks:
        config = moved(config, {port: mock.port for port, mock in mocks.items()})
        create_table(dynamo.endpoint_url, TABLE, default_template_path())
        settings, admin_key = with_admin_key(local_settings(dynamo.endpoint_url))
        asyncio.run(store_config(settings, config))
        client_key = asyncio.run(mint_client_key(settings, "local-client"))
        models = config.public_models()
        banner = Banner(
            admin_key,
            client_key,
            TABLE,
            dynamo.endpoint_url,
            mock_lines(config) if mocking else [],
            model="fast-chat" if "fast-chat" in models or not models else models[0],
            failover="demo-failover" in models,
        )
        # The health job and the quota refresh, every minute, as EventBridge runs them on AWS.
        with Schedule(settings, local_session()):
            serve(settings, args.port, banner=banner, clock=clock, sock=sock)


if __name__ == "__main__":
    main()
