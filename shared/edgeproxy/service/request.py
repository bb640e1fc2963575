"""One client request as the service sees it, after the web layer parsed it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from edgeproxy.config.policies import Operation
from edgeproxy.config.roles import Role
from edgeproxy.routing.access import ClientKey


@dataclass(frozen=True, slots=True)
class Translated:
    """A request as a chat body, for deployments that do not speak its surface natively.

    ``body`` is None when the request uses something chat cannot express;
    ``param`` names it and ``reason`` says why, for the 400 the client gets
    when no native deployment takes the request.
    """

    body: dict[str, Any] | None
    param: str | None = None
    reason: str = ""


@dataclass(slots=True)
class Tally:
    """The actual usage of a request's answers, added as each is counted (``Outcomes``):
    the levels above its key settle with it (``service.limits.levels``)."""

    tokens: int = 0
    spend_usd: float = 0.0


@dataclass(frozen=True, slots=True)
class ProxyRequest:
    """A validated request: which pool, what to send, who asks.

    ``body`` is the client's JSON object, forwarded unchanged except ``model``.
    ``caller`` is the affinity identity (already hashed / bucketed).
    ``pin`` is an admin's ``X-Route-Pin`` (None for ordinary clients).
    ``surface`` names the inbound protocol when the client did not speak
    OpenAI's, e.g. ``anthropic.messages``; sticky bindings are kept per surface.
    ``role``: the caller's role (deployments reserved above it are invisible).
    ``key``: the caller's table key (its tpm limit, budget and spend), if any.
    ``chat``: for a Responses request, its chat translation (deployments that
    do not list ``responses`` get that instead of ``body``).
    ``end_user``: the end user the request names (``routing.judge.end_user``), if any.
    ``cache``: what the response cache did (``api.cached``), for the request log.
    """

    operation: Operation
    model: str
    body: dict[str, Any]
    caller: str
    request_id: str
    stream: bool = False
    pin: str | None = None
    want_routing: bool = False
    want_reasons: bool = False  # an admin asked for the routing reasons in the metadata
    modalities: frozenset[str] = field(default_factory=lambda: frozenset({"text"}))
    surface: str | None = None
    role: Role = Role.FREE
    key: ClientKey | None = None
    chat: Translated | None = None
    end_user: str | None = None
    cache: str | None = None  # the response cache's part: ``miss``, ``bypass`` (None: none)
    tally: Tally = field(default_factory=Tally, compare=False)

    @property
    def protocol(self) -> str:
        """The binding's protocol/operation component, e.g. ``openai.chat``."""
        return self.surface or f"openai.{self.operation.value}"
