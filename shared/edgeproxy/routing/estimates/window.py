"""Context windows decided before the call: which deployments cannot hold a request.

A deployment that declares ``context_window`` holds prompt plus output of at
most that many tokens; ``max_output_tokens`` caps the output it writes. A
request whose prompt estimate plus requested output (at least one token) is
over a deployment's window, or whose requested output is over its output
cap, is not sent there. When no deployment of a pool can hold it, the pool
fails as an upstream would have answered (400 ``context_length_exceeded``),
without a call: the ``context_window`` fallback chain runs, or the client
gets that 400.

The prompt is counted per deployment, by its calibration for the request's
protocol (the caller passes that protocol's slice). Until it has one
(``routing.estimates.calibration``: the ratio of the prompt counts its
answers reported to ``prompt_bound``), the estimate is the text alone
(``prompt_estimate``). Once it has one (``tokens.calibrated_prompt``), the
estimate is ``prompt_bound`` (each message's frame included) times that ratio, so a chat template's
tokens are counted: a prompt that fits by the text can be refused, and one
that a deployment's tokenizer counts smaller than the text estimate can be
let through. A ratio below 1 counts down to ``FLOOR`` only, since a wrong
"fits" costs an upstream's 400 and a wrong "does not" a refusal.

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
from edgeproxy.routing.estimates.calibration import Calibration
from edgeproxy.routing.estimates.tokens import UNCALIBRATED, calibrated_prompt, requested_output
from edgeproxy.routing.faults import Fault, FaultKind
from edgeproxy.routing.judge.reasons import too_long
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


def need_of(
    body: Mapping[str, Any], operation: Operation, calibration: Calibration = UNCALIBRATED
) -> Need | None:
    """The request's need on a deployment with ``calibration`` (None for embeddings:
    they write no output)."""
    if operation is Operation.EMBEDDINGS:
        return None
    return Need(calibrated_prompt(body, calibration), max(1, requested_output(body) or 0))


def too_small(
    deployments: Sequence[Deployment],
    body: Mapping[str, Any],
    operation: Operation,
    calibrations: Mapping[str, Calibration],
) -> frozenset[str]:
    """The deployments whose declared window or output cap cannot hold the request, each
    counting its prompt by its own calibration (``calibrations``: the request's protocol's,
    by deployment id)."""
    if operation is Operation.EMBEDDINGS:
        return frozenset()
    return frozenset(
        d.id
        for d in deployments
        if (d.context_window is not None or d.max_output_tokens is not None)
        and not _need(body, operation, calibrations, d.id).fits(
            context_window=d.context_window, max_output_tokens=d.max_output_tokens
        )
    )


def _need(
    body: Mapping[str, Any],
    operation: Operation,
    calibrations: Mapping[str, Calibration],
    deployment_id: str,
) -> Need:
    need = need_of(body, operation, calibrations.get(deployment_id, UNCALIBRATED))
    assert need is not None  # embeddings were answered before
    return need


def window_fault(need: Need, deployments: Sequence[Deployment]) -> Fault:
    """The pool's answer when none of ``deployments`` can hold ``need``: the judge's
    ``context_window`` refusal (``routing.judge.reasons.too_long``), as the 400 an upstream
    gives for a prompt over its window (so its verdict names the fallback chain)."""
    largest = max((d.context_window or 0 for d in deployments), default=0)
    error = too_long(need.prompt, need.output, largest).error()
    return Fault(
        FaultKind.HTTP,
        error.message,
        error.status,
        type=error.type,
        code=error.code,
        param=error.param,
    )


def unfit(
    deployments: Sequence[Deployment],
    body: Mapping[str, Any],
    operation: Operation,
    calibrations: Mapping[str, Calibration] | None = None,
) -> tuple[frozenset[str], PoolFailure | None]:
    """The deployments too small for the request, and the pool's failure when that is all
    of them (its verdict names the ``context_window`` chain). ``calibrations``: each
    deployment's prompt calibration, by id (none: every one uncalibrated)."""
    calibrations = calibrations or {}
    small = too_small(deployments, body, operation, calibrations)
    if not deployments or small < {d.id for d in deployments}:
        return small, None
    largest = max(deployments, key=lambda d: d.context_window or 0)
    fault = window_fault(_need(body, operation, calibrations, largest.id), deployments)
    return small, PoolFailure(fault, verdict=judge(fault))
