"""A deployment's connection test: one small call to its upstream before it is saved.

The candidate goes through the same checks as the admin write that would
save it (the configuration models, the egress rule and its name
resolution, the credential-reference rule: ``ConfigEditor.trial``), then its
credential is resolved and one chat completion of one output token is sent
through the gateway's own upstream client, under the egress rule at connect
time (a deployment that serves embeddings and not chat gets one embedding of
one word instead). Nothing is stored and nothing is audited. The answer says whether it
worked, the upstream's status and the time it took; an error names the
field it is about and never carries the credential (its value is cut out of
every text the answer holds).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.models import GatewayConfig
from edgeproxy.config.policies import Operation
from edgeproxy.errors import CredentialError, UpstreamFault
from edgeproxy.service.credentials import CredentialResolver
from edgeproxy.upstream.call import UpstreamCall
from edgeproxy.upstream.client import UpstreamClient

TIMEOUT_S = 10.0  # a connection test waits this long for the whole answer
PROMPT = [{"role": "user", "content": "ping"}]


def _probe(dep: Deployment) -> tuple[Operation, dict[str, Any]]:
    """The smallest call ``dep`` serves: a chat of one token, else one embedding."""
    if Operation.CHAT not in dep.operations and Operation.EMBEDDINGS in dep.operations:
        return Operation.EMBEDDINGS, {"model": dep.model, "input": "ping"}
    return Operation.CHAT, {"model": dep.model, "messages": PROMPT, "max_tokens": 1}


@dataclass(frozen=True, slots=True)
class Tried:
    """What one connection test found."""

    ok: bool
    deployment: str
    status: int | None = None
    latency_ms: int | None = None
    field: str | None = None
    error: str | None = None
    served_model: str | None = None

    def body(self) -> dict[str, Any]:
        """The JSON answer."""
        return {
            "ok": self.ok,
            "deployment": self.deployment,
            "status": self.status,
            "latency_ms": self.latency_ms,
            "field": self.field,
            "error": self.error,
            "served_model": self.served_model,
        }


def _cut(text: str, secret: str | None) -> str:
    return text.replace(secret, "[redacted]") if secret else text


async def try_deployment(
    upstream: UpstreamClient,
    credentials: CredentialResolver,
    config: GatewayConfig,
    dep: Deployment,
    clock: Callable[[], float],
) -> Tried:
    """One small call to ``dep`` (already checked as part of ``config``), timed by ``clock``."""
    try:
        resolved = await credentials.resolve(dep.credential)
    except CredentialError as exc:
        return Tried(False, dep.id, field="credential", error=str(exc))
    secret = resolved.get_secret_value() if resolved else None
    operation, body = _probe(dep)
    call = UpstreamCall(
        deployment=dep,
        operation=operation,
        body=body,
        credential=secret,
        response_timeout_s=TIMEOUT_S,
        limits=config.gateway.upstream_limits,
        egress=config.gateway.egress,
    )
    started = clock()
    try:
        answer = await upstream.send(call)
    except UpstreamFault as exc:
        fault = exc.fault
        text = f"{fault.kind.value}: {fault.message}"
        status = fault.status
        where = "credential" if status in (401, 403) else "base_url"
        return Tried(False, dep.id, status=status, field=where, error=_cut(text, secret))
    latency = round((clock() - started) * 1000)
    model = answer.body.get("model")
    return Tried(
        True,
        dep.id,
        status=answer.status,
        latency_ms=latency,
        served_model=_cut(model, secret) if isinstance(model, str) else None,
    )
