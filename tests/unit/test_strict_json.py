"""The strict JSON reader: only documents the gateway can encode again get through."""

from __future__ import annotations

import json

import pytest

from edgeproxy import strict_json


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": NaN}',
        b'{"a": Infinity}',
        b'{"a": -Infinity}',
        b'{"a": 1e400}',
        b'{"a": -1e999}',
        b'{"model": "\\ud800"}',
        b'{"\\udfff": 1}',
        b'{"a": ["ok", "\\ud83d"]}',
        b'{"a": "\\ude00\\ud83d"}',  # the pair's halves in the wrong order
        b"{not json",
        b"\xff\xfe{}",
        b'{"a": ' + b"1" * 5000 + b"}",  # beyond Python's integer digit limit
    ],
)
def test_documents_that_cannot_be_encoded_again_are_rejected(raw: bytes) -> None:
    with pytest.raises(ValueError, match=r"JSON|surrogate|large|nesting") as caught:
        strict_json.loads(raw)
    assert b"ud800" not in str(caught.value).encode()  # the reason, never the input


def test_valid_documents_pass_unchanged() -> None:
    raw = '{"emoji": "\\ud83d\\ude00", "n": [1, -2.5e10, 1e308], "z": null, "t": true}'
    value = strict_json.loads(raw)
    assert value == json.loads(raw)
    json.dumps(value, ensure_ascii=False, allow_nan=False).encode()  # re-encodes


def test_nesting_is_allowed_up_to_the_documented_depth() -> None:
    def nested(levels: int) -> str:
        return "[" * (levels - 1) + "{}" + "]" * (levels - 1)

    assert strict_json.loads(nested(strict_json.MAX_DEPTH)) is not None
    with pytest.raises(ValueError, match="nesting deeper than 128"):
        strict_json.loads(nested(strict_json.MAX_DEPTH + 1))
    with pytest.raises(ValueError, match="nesting deeper"):
        strict_json.loads("[" * 100_000 + "]" * 100_000)  # the parser's own recursion limit
    with pytest.raises(ValueError, match="nesting deeper"):
        strict_json.loads('{"a":' * 1000 + "1" + "}" * 1000)


def test_check_walks_values_built_in_code() -> None:
    strict_json.check({"a": [1.5, "x"]})
    with pytest.raises(ValueError, match="non-finite"):
        strict_json.check({"a": float("nan")})
    with pytest.raises(ValueError, match="surrogate"):
        strict_json.check(["\udc80"])
