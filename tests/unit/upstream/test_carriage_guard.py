"""Each adapter refuses exactly what routing filters out: both read ``CARRIAGE``.

For every provider kind, operation and request shape, the adapter's own
last guard accepts the call if and only if routing would let the
deployment take it (``routing.eligibility.supports`` with the request's
features), so a deployment routing picks never fails as INCOMPATIBLE.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from edgeproxy.config.deployment import Deployment, ProviderKind
from edgeproxy.config.policies import Operation
from edgeproxy.errors import UpstreamFault
from edgeproxy.routing.eligibility import supports
from edgeproxy.routing.faults import Fault, FaultKind
from edgeproxy.routing.features import request_features
from edgeproxy.upstream.anthropic import AnthropicAdapter
from edgeproxy.upstream.azure import AzureAdapter
from edgeproxy.upstream.bedrock_convert import to_converse
from edgeproxy.upstream.call import UpstreamCall
from edgeproxy.upstream.openai import OpenAIAdapter

HELLO = [{"role": "user", "content": "Hello"}]
PNG = "data:image/png;base64,iVBORw0KGgo="


def _user(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": list(parts)}]}


CHAT_BODIES = [
    {"messages": HELLO},
    {"messages": HELLO, "n": 2},
    {"messages": HELLO, "response_format": {"type": "json_object"}},
    _user({"type": "text", "text": "Look."}, {"type": "image_url", "image_url": {"url": PNG}}),
    _user({"type": "image_url", "image_url": {"url": "https://example.test/cat.png"}}),
    _user({"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}),
    _user({"type": "file", "file": {"file_id": "file-1"}}),
    {"messages": [{"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]}]},
]
OTHER_BODIES = {
    Operation.EMBEDDINGS: {"input": "x"},
    Operation.COMPLETIONS: {"prompt": "x"},
    Operation.RESPONSES: {"input": "x"},
    Operation.IMAGES: {"prompt": "x"},
}
ALL = frozenset({"text", "image", "audio"})


def _deployment(kind: ProviderKind) -> Deployment:
    fields: dict[str, Any] = {
        "id": kind.value,
        "model": "m",
        "provider": kind,
        "upstream_model": "up",
        "modalities": ALL,  # modalities are the deployment's own filter, not the kind's
        "operations": frozenset(Operation),
    }
    if kind is not ProviderKind.BEDROCK:
        fields["base_url"] = "https://upstream.example.test/v1"
    return Deployment(**fields)


def _prepare(kind: ProviderKind) -> Callable[[UpstreamCall], object]:
    if kind is ProviderKind.BEDROCK:
        return to_converse
    if kind is ProviderKind.ANTHROPIC:
        return AnthropicAdapter().prepare
    if kind is ProviderKind.AZURE:
        return AzureAdapter().prepare
    return OpenAIAdapter().prepare


def _refusal(kind: ProviderKind, operation: Operation, body: dict[str, Any]) -> Fault | None:
    try:
        _prepare(kind)(UpstreamCall(_deployment(kind), operation, body))
    except UpstreamFault as caught:
        return caught.fault
    return None


def _accepted(kind: ProviderKind, operation: Operation, body: dict[str, Any]) -> bool:
    refusal = _refusal(kind, operation, body)
    assert refusal is None or refusal.kind is FaultKind.INCOMPATIBLE, refusal
    return refusal is None


CASES = [(Operation.CHAT, body) for body in CHAT_BODIES] + list(OTHER_BODIES.items())


@pytest.mark.parametrize("kind", list(ProviderKind))
@pytest.mark.parametrize(("operation", "body"), CASES)
def test_the_adapter_accepts_exactly_what_routing_lets_it_take(
    kind: ProviderKind, operation: Operation, body: dict[str, Any]
) -> None:
    # An adapter is sent a Responses call only natively (the others get its chat translation).
    routed = supports(
        _deployment(kind),
        operation,
        frozenset(),
        native=operation is Operation.RESPONSES,
        features=request_features(operation, body),
    )
    assert _accepted(kind, operation, body) is routed


def test_the_declaration_is_not_vacuous() -> None:
    # Each limit the adapters had before the declaration is still one.
    assert not _accepted(ProviderKind.ANTHROPIC, Operation.CHAT, CHAT_BODIES[1])
    assert not _accepted(ProviderKind.BEDROCK, Operation.CHAT, CHAT_BODIES[2])
    assert not _accepted(ProviderKind.BEDROCK, Operation.CHAT, CHAT_BODIES[4])
    assert not _accepted(ProviderKind.ANTHROPIC, Operation.CHAT, CHAT_BODIES[5])
    assert not _accepted(ProviderKind.AZURE, Operation.RESPONSES, OTHER_BODIES[Operation.RESPONSES])
    assert _accepted(ProviderKind.OPENAI_COMPAT, Operation.CHAT, CHAT_BODIES[1])
    assert _accepted(ProviderKind.ANTHROPIC, Operation.CHAT, CHAT_BODIES[4])
