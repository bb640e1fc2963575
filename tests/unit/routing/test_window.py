"""The context-window rule: prompt estimate plus requested output against declared windows."""

from __future__ import annotations

from edgeproxy.config.policies import Operation
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
    assert too_small(pool, need_of(BODY, Operation.CHAT)) == {"window", "cap"}


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
