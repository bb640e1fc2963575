"""Stored answers (the response cache, idempotent retries): the answer, its items, its store.

A ``StoredAnswer`` is what a client received, byte for byte: the status, the
response headers that describe the answer (``STORED_HEADERS``; never a
request id, a rate-limit header or anything an upstream sent beyond them),
the content type, and the body (a JSON answer's bytes, or for a stream the
exact SSE bytes the client was sent). ``meta`` carries what the caller
needs to account for a replay (the cost the answer had, its tokens).

Item layout (the state table; ``<digest>`` is the caller's key, already a
hash of whatever it is stored under, scope included):

==================  ====================  ===============  ===========================
item                pk                    sk               attributes
==================  ====================  ===============  ===========================
stored answer part  ``answer#<digest>``   ``part#<n>``     body (zlib slice),
                                                           version, parts, expires_at;
                                                           part 0 also: meta (JSON:
                                                           status, headers, type,
                                                           stored_at, meta)
==================  ====================  ===============  ===========================

The whole encoded answer is compressed once (zlib) and the compressed
bytes are cut into slices of at most ``PART_BYTES`` (an item holds 400 KB);
an answer of up to ``MAX_PARTS`` slices is stored, a bigger one is refused
(``AnswerTooLarge``): ``MAX_STORED_BYTES`` compressed, so one Query reads it
whole. Every part carries the writer's ``version`` and the part count, and a
reader takes an answer only when part 0's version and count agree with every
part it read (two writers racing on one key leave one whole answer or a
miss, never a mix). Readers skip expired items themselves (TTL deletion is lazy).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from edgeproxy.errors import AnswerTooLarge as AnswerTooLarge

PREFIX = "answer#"
PART_BYTES = 350_000  # below the 400 KB item limit with room for the key and attributes
MAX_PARTS = 4  # one Query (1 MB a page) reads them all
MAX_STORED_BYTES = PART_BYTES * MAX_PARTS  # compressed
# The response headers a stored answer keeps; everything else is the replaying request's own.
STORED_HEADERS = frozenset(
    {
        "content-type",
        "x-edgeproxy-deployment",
        "openai-model",
        "openai-processing-ms",
        "anthropic-model",
    }
)


@dataclass(frozen=True, slots=True)
class StoredAnswer:
    """One complete answer as its client received it (see the module doc).

    ``stored_at`` (epoch seconds) gives a replay its ``Age``; ``stream``: the
    body is SSE bytes, to be replayed as a stream.
    """

    status: int
    content_type: str
    body: bytes
    stored_at: float
    headers: tuple[tuple[str, str], ...] = ()
    stream: bool = False
    meta: Mapping[str, Any] = field(default_factory=dict)

    def encoded(self) -> bytes:
        """The answer as one compressed blob (the meta JSON, a NUL, the body)."""
        head = json.dumps(
            {
                "status": self.status,
                "type": self.content_type,
                "headers": [list(h) for h in self.headers],
                "stored_at": self.stored_at,
                "stream": self.stream,
                "meta": dict(self.meta),
            },
            separators=(",", ":"),
            sort_keys=True,
        ).encode()
        return zlib.compress(head + b"\0" + self.body, 6)

    @classmethod
    def decoded(cls, blob: bytes) -> StoredAnswer:
        """The inverse of ``encoded``; raises ``ValueError`` on a blob it did not write."""
        try:
            raw = zlib.decompress(blob)
            head, _, body = raw.partition(b"\0")
            fields = json.loads(head)
            return cls(
                status=int(fields["status"]),
                content_type=str(fields["type"]),
                body=body,
                stored_at=float(fields["stored_at"]),
                headers=tuple((str(k), str(v)) for k, v in fields["headers"]),
                stream=bool(fields["stream"]),
                meta=dict(fields["meta"]),
            )
        except (zlib.error, KeyError, TypeError, ValueError) as exc:
            raise ValueError("not a stored answer") from exc


def slices(blob: bytes) -> list[bytes]:
    """``blob`` cut into the parts it is stored as; ``AnswerTooLarge`` past ``MAX_PARTS``."""
    if len(blob) > MAX_STORED_BYTES:
        raise AnswerTooLarge(f"{len(blob)} compressed bytes (at most {MAX_STORED_BYTES})")
    return [blob[i : i + PART_BYTES] for i in range(0, len(blob), PART_BYTES)] or [b""]


def answer_partition(digest: str) -> str:
    """The partition of the stored answer under ``digest``."""
    return f"{PREFIX}{digest}"


def part_key(n: int) -> str:
    """The sort key of part ``n``."""
    return f"part#{n}"


class AnswerStore(Protocol):
    """Where stored answers are kept (``DynamoAnswers``)."""

    async def put_answer(self, digest: str, answer: StoredAnswer, expires_at: float) -> None:
        """Store ``answer`` under ``digest`` until ``expires_at`` (replacing what was there).

        Raises ``AnswerTooLarge`` (nothing written) past ``MAX_STORED_BYTES``.
        """
        ...

    async def get_answer(
        self, digest: str, now: float, *, consistent: bool = False
    ) -> StoredAnswer | None:
        """The answer stored under ``digest`` (None: none, expired at ``now``, or torn);
        ``consistent``: a strongly consistent read."""
        ...
