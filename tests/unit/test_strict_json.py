"""The strict JSON reader: only documents the gateway can encode again get through."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


# orjson parses, json is the reference: on every document both must give the same value
# (same types: 1 is not 1.0) or the same error message.
def _outcome(loads: Callable[[str | bytes], Any], raw: str | bytes) -> tuple[str, str]:
    try:
        return "value", repr(loads(raw))
    except ValueError as exc:
        return "error", str(exc)


def _reference(raw: str | bytes) -> Any:
    return strict_json._json_loads(raw, strict_json.MAX_DEPTH)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(blacklist_categories=())),  # surrogates too
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.dictionaries(
            st.text(st.characters(blacklist_categories=()), max_size=5), inner, max_size=5
        )
    ),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(json_values, st.booleans(), st.booleans(), st.data())
def test_every_document_parses_as_the_standard_library_and_checks_would(
    value: Any, ascii_only: bool, as_text: bool, data: st.DataObject
) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    raw: str | bytes = text if as_text else text.encode("utf-8", "surrogatepass")
    if not as_text and data.draw(st.booleans(), label="mutate"):
        assert isinstance(raw, bytes)
        at = data.draw(st.integers(0, len(raw)), label="at")
        byte = data.draw(st.binary(min_size=0, max_size=2), label="bytes")
        cut = data.draw(st.integers(0, 2), label="cut")
        raw = raw[:at] + byte + raw[at + cut :]
    assert _outcome(strict_json.loads, raw) == _outcome(_reference, raw)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"seed": 18446744073709551616}',  # 2**64: orjson alone would make it a float
        b'{"seed": -9223372036854775809}',
        b'{"seed": 18446744073709551615, "n": 1000000000000000000000}',
        b'{"a": 0.12345678901234567890123}',
        b'\xef\xbb\xbf{"bom": true}',  # json reads a UTF-8 byte-order mark; orjson refuses it
        '{"a": 1}'.encode("utf-16"),
        b'{"a": -0, "b": -0.0, "c": 1E2, "d": 5e-400, "a": 2}',
        "[" * 129 + "]" * 129,  # past our 128 levels, within orjson's 1024
        b"[" * 1025 + b"]" * 1025,  # past orjson's own limit
        '{"a": "\udc80"}',  # a str no UTF-8 can encode
        b'{"a": "\xed\xa0\x80"}',  # a surrogate encoded as UTF-8 bytes
        b'{"a": "tab\there"}',
        b'{"a": 1}\x0c',
        b'{"a": 01}',
    ],
)
def test_where_orjson_alone_would_differ_the_answer_is_jsons(raw: str | bytes) -> None:
    assert _outcome(strict_json.loads, raw) == _outcome(_reference, raw)


def test_integers_past_64_bits_stay_exact() -> None:
    assert strict_json.loads(b'{"seed": 18446744073709551616}') == {"seed": 2**64}
    assert type(strict_json.loads(b"[123456789012345678901234567890]")[0]) is int
