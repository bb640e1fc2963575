"""``POST /v1/messages/count_tokens`` over a pool: Anthropic's own count when it can be had.

The count is asked of the pool's Anthropic deployments the caller may use,
highest priority first, one after another until one answers (a 400-class
refusal of the body is the client's answer, as on ``/v1/messages``; a 404 or
405 is an Anthropic-compatible server without the count route, so the next
deployment, or the estimate, answers instead); the request
is not routed (a count is free upstream and costs no model capacity), so it
touches neither circuits nor rate counters. ``None`` means no Anthropic
deployment answered, and the edge then gives its estimate
(``api/surfaces/messages_tokens.py``).

    counter = TokenCounter(upstream, credentials)
    counted = await counter.count(config.pool("fast-chat"), body, Role.FREE, limits)
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from edgeproxy.config.deployment import Deployment, ProviderKind
from edgeproxy.config.egress import EgressSettings
from edgeproxy.config.models import UpstreamLimits
from edgeproxy.config.policies import Operation
from edgeproxy.config.roles import Role
from edgeproxy.errors import CredentialError, UpstreamFault
from edgeproxy.routing.access import reachable
from edgeproxy.routing.faults import FailureClass
from edgeproxy.routing.refusal import fault_error
from edgeproxy.routing.verdict import judge
from edgeproxy.service.credentials import CredentialResolver
from edgeproxy.upstream.call import UpstreamCall
from edgeproxy.upstream.client import UpstreamClient

logger = logging.getLogger(__name__)
COUNT_TIMEOUT_S = 30.0  # per deployment; a count is quick or the provider is in trouble
NO_COUNT_ROUTE = frozenset({404, 405})  # the upstream has no /messages/count_tokens


@dataclass(frozen=True, slots=True)
class Counted:
    """An upstream's answer (``{"input_tokens": n}``) and the deployment that gave it."""

    body: dict[str, Any]
    deployment_id: str


def counters(pool: Sequence[Deployment], role: Role) -> list[Deployment]:
    """The pool's deployments that can count: Anthropic, serving chat, open to ``role``."""
    able = [
        d
        for d in pool
        if d.provider is ProviderKind.ANTHROPIC
        and Operation.CHAT in d.operations
        and reachable(d, role)
    ]
    return sorted(able, key=lambda d: -d.priority)


class TokenCounter:
    """Asks Anthropic deployments to count a Messages body's input tokens."""

    def __init__(self, upstream: UpstreamClient, credentials: CredentialResolver) -> None:
        self._upstream = upstream
        self._credentials = credentials

    async def count(
        self,
        pool: Sequence[Deployment],
        body: Mapping[str, Any],
        role: Role,
        limits: UpstreamLimits,
        egress: EgressSettings | None = None,
    ) -> Counted | None:
        """The first answer of ``counters(pool, role)``, or ``None`` if none answered.

        Raises the upstream's error (``EdgeproxyError``) when it refused the body itself.
        """
        for dep in counters(pool, role):
            try:
                secret = await self._credentials.resolve(dep.credential)
                call = UpstreamCall(
                    deployment=dep,
                    operation=Operation.CHAT,
                    body=body,
                    credential=secret.get_secret_value() if secret else None,
                    response_timeout_s=COUNT_TIMEOUT_S,
                    limits=limits,
                    egress=egress or EgressSettings(),
                )
                answer = await self._upstream.count_tokens(call)
            except CredentialError as exc:
                logger.error("deployment %s: %s", dep.id, exc)
                continue
            except UpstreamFault as exc:
                if exc.fault.status in NO_COUNT_ROUTE:
                    # An Anthropic-compatible server without the count route: not the
                    # client's error, only a deployment that cannot count.
                    logger.info("token count not served: deployment=%s", dep.id)
                    continue
                if judge(exc.fault).cls is FailureClass.REQUEST:
                    raise fault_error(exc.fault) from None  # the body itself is refused
                logger.warning(
                    "token count failed: deployment=%s kind=%s", dep.id, exc.fault.kind.value
                )
                continue
            if isinstance(answer.get("input_tokens"), int):
                return Counted(answer, dep.id)
            logger.warning("token count answer without input_tokens: deployment=%s", dep.id)
        return None
