"""The seam between the client and a provider's wire protocol.

The client does HTTP, deadlines and error translation; an adapter only says
which path and headers a call needs, how the body looks on the wire, and how
the answer and stream events read back in OpenAI format.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any, Protocol

from edgeproxy.config.providers import ProviderKind, uncarried
from edgeproxy.errors import UpstreamFault
from edgeproxy.routing.faults import FaultKind
from edgeproxy.routing.features import request_features
from edgeproxy.upstream.call import StreamEvent, UpstreamCall, Usage
from edgeproxy.upstream.errors import fault
from edgeproxy.upstream.sse import ServerSentEvent


@dataclass(frozen=True, slots=True)
class Prepared:
    """A request ready to send: ``path`` is appended to the deployment's base URL.

    ``query``: parameters the protocol needs (Azure's ``api-version``); the
    deployment's own ``query`` map is added by the client.
    """

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    query: dict[str, str] = field(default_factory=dict)


class ChunkTranslator(Protocol):
    """Stateful: turns one provider stream's SSE events into OpenAI chunks."""

    usage: Usage | None

    def feed(self, event: ServerSentEvent) -> list[StreamEvent]:
        """The OpenAI stream events for one SSE event (possibly none).

        Raises ``UpstreamFault`` (MALFORMED) for unparseable data and (HTTP)
        for an error event inside the stream.
        """
        ...


class Adapter(Protocol):
    """A provider's protocol, as the client needs it."""

    def prepare(self, call: UpstreamCall) -> Prepared:
        """Path, headers and wire body; raises ``UpstreamFault`` (INCOMPATIBLE)."""
        ...

    def response(self, payload: dict[str, Any], created: int) -> dict[str, Any]:
        """A 2xx JSON answer in OpenAI format; raises ``UpstreamFault`` (MALFORMED)."""
        ...

    def translator(
        self, created: int, secrets: Sequence[str | None], include_usage: bool = False
    ) -> ChunkTranslator:
        """A fresh translator for one stream; ``secrets`` are scrubbed from errors.

        ``include_usage``: the client asked for the final usage chunk
        (``stream_options.include_usage``); a translator whose upstream does
        not send one in OpenAI's shape makes it from the usage it reported.
        """
        ...


def wants_usage(body: Mapping[str, Any]) -> bool:
    """Whether a chat body asks for the final usage chunk (``stream_options.include_usage``)."""
    options = body.get("stream_options")
    return isinstance(options, Mapping) and options.get("include_usage") is True


def wire_body(call: UpstreamCall) -> dict[str, Any]:
    """The client's body with the upstream model, and ``stream`` matching the call.

    ``stream`` is touched only when it disagrees with the call: asking for a
    JSON answer from a body that says ``stream: true`` would get SSE back.
    """
    body = dict(call.body)
    body["model"] = call.deployment.upstream_model
    if call.stream:
        body["stream"] = True
    elif "stream" in body:
        body["stream"] = False
    return body


def check_carried(call: UpstreamCall) -> None:
    """Raise INCOMPATIBLE when the deployment's provider kind cannot carry ``call``.

    The last guard, read from the same declaration routing filters on before
    selection (``config.providers.CARRIAGE``): only a call routing did not
    choose (an admin's pin) gets here with what its adapter cannot translate.
    """
    kind, carriage = call.deployment.provider, call.deployment.carriage
    if call.operation not in carriage.operations:
        raise fault(
            FaultKind.INCOMPATIBLE,
            f"operation {call.operation.value} is not supported by {kind.value} deployments",
        )
    if not carriage.limited:
        return
    lacking = carriage.lacking(request_features(call.operation, call.body))
    if lacking:
        raise refused(kind, frozenset(lacking))


def refused(kind: ProviderKind, lacking: Set[str]) -> UpstreamFault:
    """The INCOMPATIBLE fault for features ``lacking`` that ``kind`` cannot carry."""
    message, param = uncarried({kind: lacking})
    return fault(FaultKind.INCOMPATIBLE, message, param=param)
