"""Azure OpenAI upstreams: the OpenAI protocol under Azure's paths and keys.

    POST {base_url}/openai/deployments/{upstream_model}/chat/completions?api-version=...
    POST {base_url}/openai/deployments/{upstream_model}/embeddings?api-version=...

``base_url`` is the resource endpoint (``https://<resource>.openai.azure.com``);
``upstream_model`` is the Azure *deployment name*. The credential is sent as
``api-key`` or, with ``auth: entra``, as ``Authorization: Bearer`` (a
Microsoft Entra ID access token). Bodies and answers are OpenAI's; the
``content_filter_results`` Azure adds pass through untouched.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from edgeproxy.config.deployment import AzureAuth
from edgeproxy.config.policies import Operation
from edgeproxy.upstream.adapter import Prepared, check_carried, wire_body
from edgeproxy.upstream.call import UpstreamCall
from edgeproxy.upstream.openai import OpenAIChunks

_OPERATIONS = {Operation.CHAT: "chat/completions", Operation.EMBEDDINGS: "embeddings"}


class AzureAdapter:
    """Azure's deployment-scoped paths, ``api-version`` query and ``api-key`` header."""

    def prepare(self, call: UpstreamCall) -> Prepared:
        """Path, query, headers and body; only chat and embeddings are served."""
        check_carried(call)
        operation = _OPERATIONS[call.operation]  # every operation CARRIAGE lists for azure
        dep = call.deployment
        headers = {"accept": "text/event-stream" if call.stream else "application/json"}
        if call.credential and dep.auth is AzureAuth.ENTRA:
            headers["authorization"] = f"Bearer {call.credential}"
        elif call.credential:
            headers["api-key"] = call.credential
        path = f"/openai/deployments/{quote(dep.upstream_model, safe='')}/{operation}"
        return Prepared(
            path=path,
            headers=headers,
            body=wire_body(call),
            query={"api-version": dep.azure_api_version},
        )

    def response(self, payload: dict[str, Any], created: int) -> dict[str, Any]:
        """Already OpenAI format."""
        return payload

    def translator(
        self, created: int, secrets: Sequence[str | None], include_usage: bool = False
    ) -> OpenAIChunks:
        """Azure streams ``chat.completion.chunk``s like OpenAI.

        The upstream sends the usage chunk itself when asked (``include_usage`` unused).
        """
        return OpenAIChunks(secrets)
