"""The embedded DynamoDB as a process: moto's DynamoDB backend behind ``dynamo_front``.

Run as ``python -m edgeproxy_dev.dynamo_process [--port N]``: prints
``dynamo on http://127.0.0.1:PORT`` once it listens, then serves until its
stdin closes, or SIGTERM/SIGINT (Ctrl-C in ``make run`` reaches it too).
``EmbeddedDynamo`` in ``dynamo_server`` starts and stops it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys

from moto.moto_server.werkzeug_app import create_backend_app

from edgeproxy_dev.dynamo_front import WSGIApp, serve

READY = "dynamo on "


def backend_app() -> WSGIApp:
    """moto's DynamoDB application (the same one its server runs)."""
    app: WSGIApp = create_backend_app("dynamodb")
    return app


async def run(app: WSGIApp, port: int, banner: str = READY) -> None:
    """Serve ``app`` on 127.0.0.1:``port`` until stdin reaches its end or a signal comes."""
    front = await serve(app, "127.0.0.1", port)
    print(f"{banner}http://127.0.0.1:{front.port}", flush=True)
    loop = asyncio.get_running_loop()
    stopped = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopped.set)
    stdin_closed = loop.run_in_executor(None, sys.stdin.buffer.read)
    stdin_closed.add_done_callback(lambda _: loop.call_soon_threadsafe(stopped.set))
    try:
        await stopped.wait()
    finally:
        await front.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="moto's DynamoDB on 127.0.0.1, kept-alive")
    parser.add_argument("--port", type=int, default=0, help="0: a free port")
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run(backend_app(), args.port))
    # The stdin reader thread may still block; leave without joining it.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
