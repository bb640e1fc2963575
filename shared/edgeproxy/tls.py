"""``verified_context``: the one TLS context every HTTPS client of a process shares.

Building an ``ssl.SSLContext`` loads the CA bundle into it: about 30 ms of
CPU, paid by the first request of a cold start for each client that builds
its own (the store's and the upstreams'). A context is safe to share between
connections and clients, so the process builds one, on first use, with
certifi's bundle (the one botocore verifies AWS endpoints with).
"""

from __future__ import annotations

import ssl
from functools import cache

import certifi


@cache
def verified_context() -> ssl.SSLContext:
    """Certificate and host name checks on, certifi's CA bundle; built once."""
    return ssl.create_default_context(cafile=certifi.where())
