"""A loopback TCP relay's listening half: accept on an ephemeral port, serve each connection.

The relays that stand between a gateway and the embedded DynamoDB
(``blackhole.BlackHole``, the tests' ``HoldingRelay``) differ only in how
they carry one connection's bytes (``_serve``); the listener, its accept
loop and its end are here.
"""

from __future__ import annotations

import abc
import socket
import threading

POLL_S = 0.05  # how often a blocked accept looks whether the relay was closed


class LoopbackRelay(abc.ABC):
    """Accepts on 127.0.0.1:<port> for a target; each connection gets a thread (``_serve``)."""

    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self._target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._closed = False
        self._threads: list[threading.Thread] = []

    @property
    def endpoint(self) -> str:
        """The URL to give the client instead of the target's."""
        return f"http://127.0.0.1:{self.port}"

    def _listen(self) -> None:
        """Accept connections in a background thread."""
        thread = threading.Thread(target=self._accept, name="relay", daemon=True)
        thread.start()
        self._threads.append(thread)

    def _close(self) -> None:
        """Stop accepting (the connections' threads end as ``_serve`` decides)."""
        self._closed = True
        self._listener.close()

    def _accept(self) -> None:
        self._listener.settimeout(POLL_S)
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            thread = threading.Thread(target=self._serve, args=(client,), daemon=True)
            thread.start()
            self._threads.append(thread)

    @abc.abstractmethod
    def _serve(self, client: socket.socket) -> None:
        """Serve one accepted ``client`` (each relay's own behaviour)."""
