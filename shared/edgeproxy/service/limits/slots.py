"""A bulkhead per client key: at most ``limit`` of a process's requests in progress.

A long-lived process (uvicorn, a container) serves a fixed number of
requests at once (``edgeproxy_dev.serving.MAX_REQUESTS``: 512). Without a
share per key, one key could hold every one of them, e.g. with request
heads whose bodies never come (each held until the body deadline). A
request takes its key's slot once the key is known, before its body is
read, and gives it back when its answer is over (a stream: when the stream
ends); a request beyond its key's share is answered 429 at once, without
reading the body. Lambda serves one request per environment: there the
share never binds.

Callers without a key of their own are not counted: the bootstrap admin
key (the owner's) and, with authentication off (local only), anonymous
callers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from edgeproxy.routing.judge.reasons import Write, slots_full

# A quarter of the local server's 512 request slots: four keys at their share fill the process.
MAX_KEY_REQUESTS = 128


@dataclass(slots=True)
class Slot:
    """One request's place in its key's share; ``release`` gives it back (once)."""

    _slots: KeySlots | None
    _owner: str

    def release(self) -> None:
        """Give the place back (idempotent)."""
        slots, self._slots = self._slots, None
        if slots is not None:
            slots.give_back(self._owner)


@dataclass(slots=True)
class KeySlots:
    """Requests in progress per key, in this process."""

    limit: int = MAX_KEY_REQUESTS
    _held: dict[str, int] = field(default_factory=dict)

    def take(self, owner: str | None) -> Slot:
        """A slot of ``owner``'s share (``None``: uncounted); 429 when its share is full."""
        if owner is None:
            return Slot(None, "")
        held = self._held.get(owner, 0)
        if held >= self.limit:
            raise slots_full(Write.SHARE, self.limit).error()
        self._held[owner] = held + 1
        return Slot(self, owner)

    def give_back(self, owner: str) -> None:
        """One of ``owner``'s requests is over."""
        held = self._held.get(owner, 0) - 1
        if held > 0:
            self._held[owner] = held
        else:
            self._held.pop(owner, None)

    def held(self, owner: str) -> int:
        """How many of ``owner``'s requests are in progress."""
        return self._held.get(owner, 0)
