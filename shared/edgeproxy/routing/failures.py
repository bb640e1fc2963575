"""How a failed attempt is classified: its failure class and its fallback chain.

``routing.verdict.judge`` combines these into the one verdict the rest of
the request reads.

Decisions read the structured fields of a ``Fault`` (kind, status, type,
code). Providers that put no code on an answer (Anthropic's "prompt is too
long", vLLM's "model does not exist") are recognised by a short list of
message markers, used only when no code decided the case.
"""

from __future__ import annotations

from edgeproxy.config.models import FallbackReason
from edgeproxy.routing.faults import FailureClass, Fault, FaultKind

_REQUEST_STATUSES = frozenset({400, 404, 409, 413, 422})

# Codes providers use for "this deployment's upstream model is wrong".
_MODEL_MISSING_CODES = frozenset(
    {"model_not_found", "deploymentnotfound", "deployment_not_found", "model_not_available"}
)
_MODEL_MISSING_MARKERS = ("does not exist", "not found", "no such model", "unknown model")

_CONTEXT_CODES = frozenset(
    {"context_length_exceeded", "context_window_exceeded", "max_tokens_exceeded"}
)
_CONTEXT_MARKERS = ("prompt is too long", "maximum context length", "context window")

# OpenAI: content_policy_violation; Azure: content_filter / ResponsibleAIPolicyViolation.
_CONTENT_FRAGMENTS = ("content_filter", "content_policy", "contentfilter", "responsibleai")
_CONTENT_MARKERS = ("content filtering policy", "content management policy")


def _norm(value: str | None) -> str:
    return (value or "").strip().lower()


def _message_has(fault: Fault, markers: tuple[str, ...]) -> bool:
    message = fault.message.lower()
    return any(marker in message for marker in markers)


def _is_context_window(fault: Fault) -> bool:
    code = _norm(fault.code)
    if code:
        return code in _CONTEXT_CODES
    return fault.status in (400, 413, 422) and _message_has(fault, _CONTEXT_MARKERS)


def context_shaped(fault: Fault) -> bool:
    """Whether ``fault`` names the prompt's length, whatever its status (a server over its
    context window that answers 500 "prompt is too long" says what it means)."""
    return _norm(fault.code) in _CONTEXT_CODES or _message_has(fault, _CONTEXT_MARKERS)


def _is_content_policy(fault: Fault) -> bool:
    fields = (_norm(fault.code), _norm(fault.type))
    if any(fragment in field for field in fields for fragment in _CONTENT_FRAGMENTS):
        return True
    return not fault.code and fault.status == 400 and _message_has(fault, _CONTENT_MARKERS)


def _is_model_missing(fault: Fault) -> bool:
    code = _norm(fault.code)
    if code in _MODEL_MISSING_CODES:
        return True
    if fault.status != 404 or (code and not code.isdigit()):
        return False
    # No usable code (vLLM sends the number 404 as its code): the message must
    # name the model, or any unknown-resource 404 would quarantine a deployment.
    return "model" in fault.message.lower() and _message_has(fault, _MODEL_MISSING_MARKERS)


def fallback_reason(fault: Fault, cls: FailureClass | None = None) -> FallbackReason | None:
    """Which fallback chain a request that failed this way may move to.

    Context-window and content-policy rejections have chains of their own;
    other request errors end the request (None); everything that made the
    pool fail as a pool (transient, throttle, configuration, incompatible,
    and the gateway's own failures, e.g. a credential it could not fetch)
    leads to the ``general`` chain. ``cls``: the fault's class, when already known.

    >>> fallback_reason(Fault(FaultKind.HTTP, "too long", 400, code="context_length_exceeded"))
    <FallbackReason.CONTEXT_WINDOW: 'context_window'>
    """
    if fault.kind is FaultKind.HTTP:
        if _is_context_window(fault):
            return FallbackReason.CONTEXT_WINDOW
        if _is_content_policy(fault):
            return FallbackReason.CONTENT_POLICY
    if (cls or classify(fault)) is FailureClass.REQUEST:
        return None
    return FallbackReason.GENERAL


def classify(fault: Fault) -> FailureClass:
    """The failure class of one attempt's fault, by its effect on routing.

    >>> classify(Fault(FaultKind.HTTP, "slow down", 429))
    <FailureClass.THROTTLE: 'throttle'>
    """
    if fault.kind is FaultKind.INCOMPATIBLE:
        return FailureClass.INCOMPATIBLE
    if fault.kind is FaultKind.GATEWAY:
        return FailureClass.GATEWAY
    if fault.kind is not FaultKind.HTTP:
        return FailureClass.TRANSIENT  # network, timeouts, truncation, malformed or oversize
    status = fault.status
    if status is None:
        return FailureClass.TRANSIENT
    if _is_context_window(fault) or _is_content_policy(fault):
        return FailureClass.REQUEST
    if _is_model_missing(fault):
        return FailureClass.CONFIGURATION
    if status in (401, 402, 403):
        # 402: the provider account cannot pay; no retry here will fix that.
        return FailureClass.CONFIGURATION
    if status == 429:
        return FailureClass.THROTTLE
    if status == 408 or status >= 500:
        return FailureClass.TRANSIENT
    if status in _REQUEST_STATUSES or 400 <= status < 500:
        return FailureClass.REQUEST
    # 1xx-3xx are not errors a well-behaved upstream sends for an API call.
    return FailureClass.TRANSIENT
