"""Which protocol a mock request speaks, and whether it is authorized.

    POST /v1/chat/completions, /v1/completions, /v1/embeddings,
         /v1/responses                                           openai
    POST /v1/messages, /v1/messages/count_tokens                 anthropic
    POST /openai/deployments/{name}/chat/completions|embeddings  azure (?api-version= required)
    POST /model/{modelId}/converse|converse-stream               bedrock (SigV4-signed)

A mock with an ``api_key`` wants it as ``Authorization: Bearer`` or
``x-api-key`` (openai, anthropic) or as ``api-key`` or a Bearer token (azure).
"""

from __future__ import annotations

from dataclasses import dataclass

from edgeproxy_dev import mock_bedrock as bedrock
from edgeproxy_dev.mock_http import Request

_PLAIN = {
    "/v1/chat/completions": "chat",
    "/v1/completions": "completions",
    "/v1/embeddings": "embeddings",
    "/v1/messages": "messages",
    "/v1/messages/count_tokens": "count_tokens",
    "/v1/responses": "responses",
}
_ANTHROPIC = frozenset({"messages", "count_tokens"})
_AZURE_OPERATIONS = {"chat/completions": "chat", "embeddings": "embeddings"}


@dataclass(frozen=True, slots=True)
class Route:
    """``operation``: chat, completions, embeddings, messages, count_tokens, responses,
    converse or converse-stream."""

    protocol: str  # openai, anthropic, azure or bedrock
    operation: str
    model: str | None = None  # azure: the deployment name; bedrock: the model id

    @property
    def anthropic(self) -> bool:
        """Whether answers take Anthropic's shape."""
        return self.protocol == "anthropic"


def resolve(request: Request) -> Route | None:
    """The route of a model request (a POST), or ``None`` for an unknown path."""
    operation = _PLAIN.get(request.path)
    if operation is not None:
        return Route("anthropic" if operation in _ANTHROPIC else "openai", operation)
    prefix = "/openai/deployments/"
    if request.path.startswith(prefix):
        name, _, rest = request.path[len(prefix) :].partition("/")
        if name and rest in _AZURE_OPERATIONS and request.query.get("api-version"):
            return Route("azure", _AZURE_OPERATIONS[rest], name)
        return None
    found = bedrock.route(request.path)
    if found is not None:
        return Route("bedrock", found[0], found[1])
    return None


def authorized(route: Route, request: Request, api_key: str | None) -> bool:
    """Whether the request carries what its protocol needs."""
    headers = request.headers
    if route.protocol == "bedrock":
        return bedrock.signed(headers)
    if not api_key:
        return True
    bearer = headers.get("authorization", "").removeprefix("Bearer ")
    if route.protocol == "azure":
        return api_key in (headers.get("api-key"), bearer)
    return api_key in (headers.get("x-api-key"), bearer)
