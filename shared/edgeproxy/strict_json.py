"""JSON the gateway can always re-encode: one strict reader for client bodies and upstream answers.

Python's ``json`` accepts documents that are not JSON (``NaN``, ``Infinity``)
or that no UTF-8 encoder can write back (a lone surrogate such as
``"\\ud800"``), and overflows ``1e400`` to ``inf``. Everything the gateway
parses is re-encoded later (upstream request bodies by httpx, answers by
Starlette, stream chunks by the surfaces), so a value that cannot be
re-encoded is rejected here, where the caller still has a clean way to say
so: a 400 for a client body, a malformed-answer fault for an upstream.

    >>> loads(b'{"a": [1, 2.5, "x"]}')
    {'a': [1, 2.5, 'x']}
    >>> loads(b'{"a": NaN}')
    Traceback (most recent call last):
    ...
    edgeproxy.strict_json.StrictJSONError: non-finite number NaN
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

# Deeper than any real chat body (tool schemas nest a few dozen levels at most),
# far below the depth at which the parser's recursion limit would end it.
MAX_DEPTH = 128
_SURROGATE = re.compile("[\ud800-\udfff]")


_NON_FINITE = "non-finite numbers (NaN, Infinity) are not JSON"
_TOO_LARGE = "a number is too large to represent"
_OWN = frozenset({_NON_FINITE, _TOO_LARGE})


def _constant(name: str) -> Any:
    raise ValueError(_NON_FINITE)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(_TOO_LARGE)
    return value


def loads(raw: str | bytes, max_depth: int = MAX_DEPTH) -> Any:
    """Parse ``raw`` strictly; raises ``ValueError`` (its message names the rule, never the input).

    Rejected: invalid JSON or UTF-8, ``NaN`` / ``Infinity``, numbers that
    overflow a double, lone surrogates in strings or keys, and nesting deeper
    than ``max_depth`` arrays/objects.
    """
    try:
        value = json.loads(raw, parse_constant=_constant, parse_float=_float)
    except RecursionError:
        raise ValueError(f"nesting deeper than {max_depth} levels") from None
    except ValueError as exc:
        if str(exc) in _OWN:
            raise
        # JSONDecodeError, UnicodeDecodeError, integers beyond Python's digit limit:
        # their messages quote the input, which must not reach a client or a log.
        raise ValueError("not valid JSON") from None
    check(value, max_depth)
    return value


def check(value: Any, max_depth: int = MAX_DEPTH) -> None:
    """Raise ``ValueError`` if ``value`` nests too deep or holds a lone surrogate.

    Iterative, so a hostile document cannot exhaust the stack here either.
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                raise ValueError("a string holds an unpaired surrogate")
        elif isinstance(item, dict):
            if depth >= max_depth:
                raise ValueError(f"nesting deeper than {max_depth} levels")
            for key, inner in item.items():
                stack.append((key, depth + 1))
                stack.append((inner, depth + 1))
        elif isinstance(item, list):
            if depth >= max_depth:
                raise ValueError(f"nesting deeper than {max_depth} levels")
            stack.extend((inner, depth + 1) for inner in item)
        elif isinstance(item, float) and not math.isfinite(item):
            raise ValueError(_NON_FINITE)
