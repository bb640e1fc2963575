"""What a relayed stream hands the surface that serialises it, as typed events.

    Chunk      an OpenAI ``chat.completion.chunk`` the client is owed, in order
    Keepalive  nothing to say yet: routing still settles after the stream opened
    Closing    the answer is complete: what the surface owes the client at its end
    Failed     the stream ends with this error, in-band (the status was sent already)

A stream ends with exactly one ``Closing`` or ``Failed`` (unless the client
left first), and nothing follows it. Each surface renders these in its own
protocol (``api/surfaces/openai.py``, ``api/surfaces/messages_stream.py``); none re-parses
another's bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from edgeproxy.errors import EdgeproxyError
from edgeproxy.upstream.call import (
    Usage as Usage,  # a Closing's usage: the surfaces read the type here
)

# The field a usage object carries when its figures are the gateway's estimate (the
# upstream reported none); absent from the upstream's own counts. README: "Usage".
ESTIMATED = "edgeproxy_estimated"


@dataclass(frozen=True, slots=True)
class Chunk:
    """One chunk as the upstream adapter read it (its ``model`` is the upstream's).

    ``reported``: the usage the upstream had reported by this chunk (an Anthropic
    upstream's ``message_start``: its input and prompt-cache tokens), None while it
    has reported no input tokens.
    """

    data: dict[str, Any]
    reported: Usage | None = None


@dataclass(frozen=True, slots=True)
class Keepalive:
    """The connection is open and routing is still settling."""


@dataclass(frozen=True, slots=True)
class Closing:
    """The end of a complete answer.

    ``finish_reasons`` are the ones the upstream never stated, inferred per
    choice index (empty when it stated every one); ``usage`` is what the
    upstream reported for the stream; ``routing`` is the ``unified_routing``
    object when the client asked for it.
    """

    finish_reasons: Mapping[int, str] = field(default_factory=dict)
    usage: Usage | None = None
    routing: dict[str, Any] | None = None
    # What the request log, spend and tpm count: ``usage``, or the gateway's estimate
    # when the upstream reported none (``estimated``: the last attempt reported none).
    counted: Usage | None = None
    estimated: bool = False
    # The completeness judge's anomalies of the serving stream (``missing_done``...), and
    # whether it was cut and continued elsewhere: a complete answer, never a stored one.
    anomalies: tuple[str, ...] = ()
    continued: bool = False

    @property
    def shown_usage(self) -> Usage | None:
        """The usage a surface reports: what was counted (the upstream's, else the estimate)."""
        return self.counted if self.counted is not None else self.usage

    def marked(self, usage: dict[str, Any]) -> dict[str, Any]:
        """A surface's usage object, with ``ESTIMATED: true`` when it is the gateway's estimate."""
        return {**usage, ESTIMATED: True} if self.estimated else usage


@dataclass(frozen=True, slots=True)
class Failed:
    """The stream ends with ``error``; its public body is what the client may see.

    ``routing`` is the ``unified_routing`` object when the client asked for it.
    """

    error: EdgeproxyError
    routing: dict[str, Any] | None = None


StreamItem = Chunk | Keepalive | Closing | Failed
KEEPALIVE = Keepalive()
