"""The context-window rule: prompt estimate plus requested output against declared windows."""

from __future__ import annotations

from edgeproxy.config.policies import Operation
from edgeproxy.routing.estimates.calibration import Calibration, observed
from edgeproxy.routing.estimates.tokens import FLOOR, prompt_bound
from edgeproxy.routing.estimates.window import Need, need_of, too_small, unfit
from edgeproxy.routing.faults import FailureClass
from edgeproxy.routing.refusal import chain_reason

from .builders import dep

BODY = {"messages": [{"content": "x" * 400}], "max_tokens": 100}  # 100 + 100


def test_the_need_is_the_prompt_estimate_plus_the_requested_output() -> None:
    assert need_of(BODY, Operation.CHAT) == Need(prompt=100, output=100)
    assert need_of({**BODY, "n": 2}, Operation.CHAT) == Need(prompt=100, output=200)
    assert need_of({"messages": BODY["messages"]}, Operation.CHAT) == Need(100, 1)
    assert need_of({"input": "x"}, Operation.EMBEDDINGS) is None


def test_a_deployment_is_too_small_for_its_window_or_its_output_cap() -> None:
    pool = [
        dep("fits", context_window=200),
        dep("window", context_window=199),
        dep("cap", max_output_tokens=99),
        dep("undeclared"),
    ]
    assert too_small(pool, BODY, Operation.CHAT, {}) == {"window", "cap"}


def test_a_pool_none_of_which_fits_fails_as_a_context_window_400() -> None:
    pool = [dep("a", context_window=150), dep("b", context_window=199)]
    small, failure = unfit(pool, BODY, Operation.CHAT)
    assert small == {"a", "b"}
    assert failure is not None
    assert failure.fault is not None
    assert (failure.fault.status, failure.fault.code) == (400, "context_length_exceeded")
    assert failure.verdict is not None
    assert failure.verdict.cls is FailureClass.REQUEST
    assert chain_reason(failure) is not None
    assert chain_reason(failure).value == "context_window"  # type: ignore[union-attr]
    assert unfit([*pool, dep("c")], BODY, Operation.CHAT)[1] is None


# 100 tokens by the text, 100 asked for; prompt_bound adds the message frame and reply.
TEMPLATED = {"messages": [{"content": "x" * 400}], "max_tokens": 100}


def _calibrated(reported: int, answers: int = 3) -> Calibration:
    """A deployment's calibration after ``answers`` answers reporting ``reported`` tokens."""
    calibration = Calibration()
    for _ in range(answers):
        calibration = observed(calibration, prompt_bound(TEMPLATED), reported)
    return calibration


def test_a_chat_templates_tokens_make_a_prompt_that_fits_by_its_text_too_large() -> None:
    pool = [dep("a", context_window=220)]
    assert too_small(pool, TEMPLATED, Operation.CHAT, {}) == frozenset()  # 200 of 220
    # Its answers reported 150 prompt tokens where the text says 100: 250 do not fit.
    calibrations = {"a": _calibrated(150)}
    assert need_of(TEMPLATED, Operation.CHAT, calibrations["a"]) == Need(150, 100)
    assert too_small(pool, TEMPLATED, Operation.CHAT, calibrations) == {"a"}
    small, failure = unfit(pool, TEMPLATED, Operation.CHAT, calibrations)
    assert small == {"a"}
    assert failure is not None
    assert failure.fault is not None
    assert failure.fault.code == "context_length_exceeded"


def test_a_tokenizer_that_counts_less_than_the_text_estimate_lets_a_prompt_through() -> None:
    pool = [dep("a", context_window=180)]
    assert too_small(pool, TEMPLATED, Operation.CHAT, {}) == {"a"}  # 200 of 180
    # Its answers reported 60 prompt tokens: 60 + 100 fit.
    calibrations = {"a": _calibrated(60, answers=10)}
    assert too_small(pool, TEMPLATED, Operation.CHAT, calibrations) == frozenset()
    assert unfit(pool, TEMPLATED, Operation.CHAT, calibrations) == (frozenset(), None)


def test_each_deployment_counts_by_its_own_calibration_and_never_under_the_floor() -> None:
    pool = [dep("templated", context_window=220), dep("plain", context_window=220)]
    calibrations = {"templated": _calibrated(150)}
    assert too_small(pool, TEMPLATED, Operation.CHAT, calibrations) == {"templated"}
    tiny = Calibration(ratio=0.01, samples=50)
    need = need_of(TEMPLATED, Operation.CHAT, tiny)
    assert need is not None
    assert need.prompt >= FLOOR * prompt_bound(TEMPLATED)
