"""The rest of a cut answer: how much output it may still ask for, and how it joins on.

A continued answer is one answer to the client: its output stays within the
client's ``max_tokens`` / ``max_completion_tokens``, and its text reads as
the model would have written it without the cut.

Budget. A cut stream reports no usage, so what it delivered is estimated:
the larger of its content deltas (an OpenAI-compatible stream sends about
one token per delta) and its characters at ``CHARS_PER_TOKEN``. The larger,
so the whole answer errs under the client's limit rather than over it. The
continuation asks for the limit minus that; at 0 or less there is nothing
left to ask for and the answer ends as the model's would have, with
``finish_reason: "length"``.

Join. The prefill sent to the continuing deployment leaves out the shown
text's trailing whitespace (providers reject a prefill ending in it), and
``joined`` makes up for both ways a server may answer it:

- one that continues the prefill in place writes the rest with its leading
  whitespace: the part of it the client already got is not sent again;
- one whose chat template closes the assistant turn and starts a new one
  (llama-cpp-python) writes a fresh message with no leading whitespace:
  after text that ended a sentence or clause (``.,;:!?``), or a word, a rest
  that starts a new word gets the one space the model would have written
  mid-text. A lowercase letter after a letter is taken as the rest of a word
  cut in two (``"Tay" + "lor"``) and joined as it is.

    remaining_limits({"max_tokens": 400}, delivered=120)   # {"max_tokens": 280}
    joined("named Taylor.", "", "One day")                  # " One day"
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from edgeproxy.routing.estimates.tokens import CHARS_PER_TOKEN

OUTPUT_LIMITS = ("max_tokens", "max_completion_tokens")  # a chat request's output limits
_CLAUSE_ENDS = frozenset(".,;:!?")


def delivered_tokens(text: str, deltas: int) -> int:
    """The output tokens a cut stream delivered, by the estimate: ``text`` over ``deltas``.

    >>> delivered_tokens("Hello there", 2)
    3
    """
    return max(deltas, math.ceil(len(text) / CHARS_PER_TOKEN))


def remaining_limits(body: Mapping[str, Any], delivered: int) -> dict[str, int]:
    """Each output limit the request set, less the ``delivered`` tokens (may be 0 or less)."""
    out: dict[str, int] = {}
    for name in OUTPUT_LIMITS:
        limit = body.get(name)
        if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
            out[name] = limit - delivered
    return out


def spent(limits: Mapping[str, int]) -> bool:
    """Whether nothing is left of the client's output limit (the answer ends with length)."""
    return any(left <= 0 for left in limits.values())


def joined(shown: str, rest_so_far: str, content: str) -> str:
    """The text to send for ``content``, the continuation's next delta.

    ``shown``: what the client got before the cut; ``rest_so_far``: what the
    continuation wrote before ``content`` (as it wrote it). Whatever the split
    of the rest into deltas, the sent parts add up to ``_join(shown, rest)``.
    """
    before = _join(shown, rest_so_far)
    after = _join(shown, rest_so_far + content)
    return after[len(before) :]


def _join(shown: str, rest: str) -> str:
    """What goes after ``shown`` for the whole ``rest`` of the answer."""
    owed = shown[len(shown.rstrip()) :]
    if owed:
        k = 0
        while k < len(rest) and k < len(owed) and rest[k] == owed[k]:
            k += 1
        return rest[k:]
    if shown and rest and _new_word(shown[-1], rest[0]):
        return " " + rest
    return rest


def _new_word(last: str, first: str) -> bool:
    """Whether a fresh message starting with ``first`` after ``last`` lost a space."""
    if not first.isalpha():
        return False
    return last in _CLAUSE_ENDS or (last.isalnum() and first.isupper())
