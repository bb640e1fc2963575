"""The object a Lambda function exposes as ``handler``, and ``lean_init`` around building it."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

Invoke = Callable[[dict[str, Any], Any], dict[str, Any]]

# OpenSSL reads these when a context loads its "default verify paths".
_DEFAULT_BUNDLE = ("SSL_CERT_FILE", "SSL_CERT_DIR")


@contextmanager
def lean_init() -> Iterator[None]:
    """Around a function's import and init (``functions/*/app.py``): no CA bundle loaded for nothing.

    aiohttp builds two TLS contexts when imported (``aiohttp.connector``'s
    defaults, each loading the system's CA bundle): about a fifth of the
    proxy's import CPU. edgeproxy never uses them: every client passes
    ``tls.verified_context()`` (certifi's bundle, loaded on first use). Inside
    the block OpenSSL's default bundle is an empty one (``os.devnull``), so
    those defaults trust nothing: a client that fell back to them would fail
    its handshake, never skip verification. The environment is put back as it
    was when the block ends, however it ends.

    (Switching the collector off during init and freezing its heap at the end
    was measured too: 4% fewer instructions for import and first event
    together, but the first event, all a SnapStart restore pays, 1.5x.)
    """
    saved = {name: os.environ.get(name) for name in _DEFAULT_BUNDLE}
    os.environ.update(dict.fromkeys(_DEFAULT_BUNDLE, os.devnull))
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class Entrypoint:
    """Call it with (event, context); ``close()`` releases its clients.

    Lambda never calls ``close`` (it freezes the execution environment);
    tests and benchmarks do, so no client outlives its event loop.
    """

    def __init__(self, invoke: Invoke, close: Callable[[], None]) -> None:
        self._invoke = invoke
        self._close = close

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        return self._invoke(event, context)

    def close(self) -> None:
        """Close the clients built by earlier invocations."""
        self._close()
