"""Lambda entry point of the proxy: API Gateway HTTP API -> the edgeproxy ASGI app."""

from edgeproxy.api.handler import build_handler

handler = build_handler()
