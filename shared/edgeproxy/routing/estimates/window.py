"""Context windows decided before the call: which deployments cannot hold a request.

A deployment that declares ``context_window`` holds prompt plus output of at
most that many tokens; ``max_output_tokens`` caps the output it writes. A
request whose prompt estimate plus requested output (at least one token) is
over a deployment's window, or whose requested output is over its output
cap, is not sent there. When no deployment of a pool can hold it, the pool
fails as an upstream would have answered (400 ``context_length_exceeded``),
without a call: the ``context_window`` fallback chain runs, or the client
gets that 400.

>>> need = Need(prompt=900, output=200)
>>> need.fits(context_window=1024, max_output_tokens=None)
False
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.policies import Operation
from edgeproxy.routing.estimates.tokens import prompt_estimate, requested_output
from edgeproxy.routing.faults import Fault, FaultKind
from edgeproxy.routing.step import PoolFailure
from edgeproxy.routing.verdict import judge


@dataclass(frozen=True, slots=True)
class Need:
    """What one request needs of a window: its prompt estimate and requested output."""

    prompt: int
    output: int  # at least 1: an answer is at least one token

    def fits(self, *, context_window: int | None, max_output_tokens: int | None) -> bool:
        """Whether a deployment with this window and output cap can serve the request."""
        if max_output_tokens is not None and self.output > max_output_tokens:
            return False
        return context_window is None or self.prompt + self.output <= context_window


def need_of(body: Mapping[str, Any], operation: Operation) -> Need | None:
    """The request's need (None for embeddings: they write no output)."""
    if operation is Operation.EMBEDDINGS:
        return None
    return Need(prompt_estimate(body), max(1, requested_output(body) or 0))


def too_small(deployments: Sequence[Deployment], need: Need | None) -> frozenset[str]:
    """The deployments whose declared window or output cap cannot hold ``need``."""
    if need is None:
        return frozenset()
    return frozenset(
        d.id
        for d in deployments
        if not need.fits(context_window=d.context_window, max_output_tokens=d.max_output_tokens)
    )


def window_fault(need: Need, deployments: Sequence[Deployment]) -> Fault:
    """The pool's answer when none of ``deployments`` can hold ``need``: the 400 an
    upstream gives for a prompt over its window."""
    largest = max((d.context_window or 0 for d in deployments), default=0)
    return Fault(
        FaultKind.HTTP,
        f"This request needs about {need.prompt + need.output} tokens (prompt estimate "
        f"{need.prompt}, output {need.output}); the largest context window of this model "
        f"is {largest}. Shorten the messages or lower max_tokens.",
        400,
        type="invalid_request_error",
        code="context_length_exceeded",
        param="messages",
    )


def unfit(
    deployments: Sequence[Deployment], body: Mapping[str, Any], operation: Operation
) -> tuple[frozenset[str], PoolFailure | None]:
    """The deployments too small for the request, and the pool's failure when that is all
    of them (its verdict names the ``context_window`` chain)."""
    need = need_of(body, operation)
    small = too_small(deployments, need)
    if need is None or not deployments or small < {d.id for d in deployments}:
        return small, None
    fault = window_fault(need, deployments)
    return small, PoolFailure(fault, verdict=judge(fault))
