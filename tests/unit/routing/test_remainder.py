"""The rest of a cut answer: its output budget and how it joins on to what was shown."""

from __future__ import annotations

import pytest

from edgeproxy.routing.stream.remainder import (
    delivered_tokens,
    joined,
    remaining_limits,
    spent,
)


def test_delivered_tokens_take_the_larger_of_deltas_and_characters() -> None:
    assert delivered_tokens("x" * 40, 3) == 10  # few long deltas: the characters say more
    assert delivered_tokens(" a b c", 6) == 6  # many short deltas: one token each
    assert delivered_tokens("", 0) == 0


def test_the_remainder_is_each_limit_less_what_was_delivered() -> None:
    body = {"max_tokens": 400, "max_completion_tokens": 120, "messages": []}
    assert remaining_limits(body, 100) == {"max_tokens": 300, "max_completion_tokens": 20}
    assert remaining_limits({"messages": []}, 100) == {}  # no limit: nothing to lower
    assert remaining_limits({"max_tokens": True}, 1) == {}  # not a number of tokens


@pytest.mark.parametrize(
    ("limit", "delivered", "used_up"), [(400, 399, False), (400, 400, True), (10, 13, True)]
)
def test_a_limit_at_or_below_zero_is_spent(limit: int, delivered: int, used_up: bool) -> None:
    assert spent(remaining_limits({"max_tokens": limit}, delivered)) is used_up
    assert not spent({})


@pytest.mark.parametrize(
    ("shown", "rest", "text"),
    [
        # a server that continues the prefill in place writes the rest with its whitespace
        ("Her name was Taylor", " and she", " and she"),
        ("The quick ", " brown fox", "brown fox"),  # the space the client had is not repeated
        ("one\n\n", "\n\nTwo", "Two"),
        ("one\n\n", "\nTwo", "Two"),
        ("one\n", "\n\nTwo", "\nTwo"),  # only what the client already had is left out
        ("Tay", "lor was", "lor was"),  # a word cut in two joins as it is
        ("pi is 3.", "14", "14"),  # digits after a point: a number, not a sentence
        # a server that starts a new turn writes a fresh message with no leading space
        ("Her name was Taylor.", "One day", " One day"),
        ("in the city,", "a cat", " a cat"),
        ("wandered into the", "Taylor was", " Taylor was"),
        ("Taylor. ", "One day", "One day"),  # the client had the space already
        ("", "Hello", "Hello"),
    ],
)
def test_the_rest_joins_on_as_the_model_would_have_written_it(
    shown: str, rest: str, text: str
) -> None:
    assert joined(shown, "", rest) == text


@pytest.mark.parametrize(
    ("shown", "rest"),
    [("Taylor.", "One day she left."), ("The quick ", " brown fox"), ("a\n\n", "\n\nB c")],
)
def test_the_join_does_not_depend_on_how_the_rest_is_split(shown: str, rest: str) -> None:
    whole = joined(shown, "", rest)
    for size in (1, 2, 3):
        parts = [rest[i : i + size] for i in range(0, len(rest), size)]
        sent = "".join(joined(shown, "".join(parts[:k]), p) for k, p in enumerate(parts))
        assert sent == whole
