"""JSON the gateway can always re-encode: one strict reader for client bodies and upstream answers.

Python's ``json`` accepts documents that are not JSON (``NaN``, ``Infinity``)
or that no UTF-8 encoder can write back (a lone surrogate such as
``"\\ud800"``), and overflows ``1e400`` to ``inf``. Everything the gateway
parses is re-encoded later (upstream request bodies by httpx, answers by
Starlette, stream chunks by the surfaces), so a value that cannot be
re-encoded is rejected here, where the caller still has a clean way to say
so: a 400 for a client body, a malformed-answer fault for an upstream.

The parse is orjson's (4-8x less CPU than ``json`` with the walk below, on
bodies from a stream chunk to a 30 KB tool list: ``bench/json_parse.py``),
which rejects NaN, Infinity, overflowing numbers and lone surrogates itself;
the depth limit is checked here, since orjson's own is 1024. Where orjson
would answer differently from ``json``, the document goes to ``json`` and the
checks below instead, so every outcome is the one ``json`` gives: an integer
past 64 bits (orjson turns it into a float; any run of 19 digits takes this
path), a byte-order mark or UTF-16 body (orjson refuses them), a ``str`` no
UTF-8 can encode, and every document orjson refuses (whose error then names
the rule, as before).

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

import orjson

# Deeper than any real chat body (tool schemas nest a few dozen levels at most),
# far below the depth at which the parser's recursion limit would end it.
MAX_DEPTH = 128
_SURROGATE = re.compile("[\ud800-\udfff]")
# Any 19 digits in a row: an integer that may not fit orjson's 64 bits (or a long
# fraction, or digits in a string: those only take the slower, equivalent path).
_DIGITS = bytes.maketrans(b"123456789", b"000000000")
_LONG_NUMBER = b"0" * 19


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
    data = _utf8(raw)
    if data is not None and _LONG_NUMBER not in data.translate(_DIGITS):
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            pass  # json below says which rule it broke (or reads a BOM or UTF-16 body)
        else:
            # No document holds more levels than opening brackets: most skip the walk.
            if data.count(b"[") + data.count(b"{") > max_depth and _deeper(value, max_depth):
                raise ValueError(f"nesting deeper than {max_depth} levels")
            return value
    return _json_loads(raw, max_depth)


def _utf8(raw: str | bytes) -> bytes | None:
    if isinstance(raw, bytes):
        return raw
    try:
        return raw.encode()
    except UnicodeEncodeError:  # a lone surrogate: json and check() say so
        return None


def _deeper(value: Any, max_depth: int) -> bool:
    """Whether ``value`` nests deeper than ``max_depth`` arrays/objects (level by level)."""
    level = [value] if isinstance(value, dict | list) else []
    for _ in range(max_depth):
        if not level:
            return False
        level = [
            inner
            for outer in level
            for inner in (outer.values() if isinstance(outer, dict) else outer)
            if isinstance(inner, dict | list)
        ]
    return bool(level)


def _json_loads(raw: str | bytes, max_depth: int) -> Any:
    """``loads`` by the standard library and ``check``: the reference ``loads`` agrees with."""
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
