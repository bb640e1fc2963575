"""Lambda entry point of the proxy: API Gateway HTTP API -> the edgeproxy ASGI app."""

from edgeproxy.entrypoint import lean_init

with lean_init():  # what the cold start need not pay (entrypoint.py)
    from edgeproxy.api.handler import build_handler

    handler = build_handler()
