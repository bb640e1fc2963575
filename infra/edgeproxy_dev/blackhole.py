"""A loopback TCP relay that can black-hole its target: accept, read, never answer.

Put between a gateway and the embedded DynamoDB, it turns the store into the
worst kind of outage (no refusal, no reset: silence) and back, without
stopping the shared server:

    with BlackHole(dynamo_port) as relay:
        gateway = GatewayServer(relay.endpoint, table)
        relay.swallow()        # from now on every byte sent to the store is dropped
        relay.restore()        # connections held so far are closed; new ones relay again
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from types import TracebackType

from edgeproxy_dev.relay import POLL_S, LoopbackRelay


class BlackHole(LoopbackRelay):
    """Relays 127.0.0.1:<port> to a target port until told to swallow."""

    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        super().__init__(target_port, target_host)
        self._swallowing = False
        self._generation = 0  # restore() ends every connection of an older generation
        self._lock = threading.Lock()

    def swallow(self) -> None:
        """Black-hole: keep accepting and reading, forward and answer nothing."""
        with self._lock:
            self._swallowing = True

    def restore(self) -> None:
        """Relay again; connections that saw the outage are closed (their state is lost)."""
        with self._lock:
            self._swallowing = False
            self._generation += 1

    def start(self) -> BlackHole:
        """Accept connections in a background thread."""
        self._listen()
        return self

    def stop(self) -> None:
        """Stop accepting and end every connection."""
        self._close()
        for thread in self._threads:
            thread.join(5)

    def _current(self, generation: int) -> tuple[bool, bool]:
        with self._lock:
            return self._swallowing, generation == self._generation and not self._closed

    def _serve(self, client: socket.socket) -> None:
        with self._lock:
            generation = self._generation
        upstream: socket.socket | None = None
        try:
            while True:
                swallowing, alive = self._current(generation)
                if not alive:
                    return
                if upstream is None and not swallowing:
                    upstream = socket.create_connection(self._target, timeout=5)
                peers = [client] if upstream is None else [client, upstream]
                readable, _, _ = select.select(peers, [], [], POLL_S)
                for ready in readable:
                    data = ready.recv(65536)
                    if not data:
                        return
                    if swallowing:
                        continue  # read and dropped: the caller waits for an answer forever
                    other = upstream if ready is client else client
                    assert other is not None
                    other.sendall(data)
        except OSError:
            return
        finally:
            for end in (client, upstream):
                if end is not None:
                    with contextlib.suppress(OSError):
                        end.close()

    def __enter__(self) -> BlackHole:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
