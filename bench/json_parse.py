"""CPU per parse of ``strict_json.loads`` (orjson) against its standard-library path.

Run as ``python -m bench.json_parse``. The standard-library path
(``strict_json._json_loads``: ``json.loads`` and the ``check`` walk) is what
``loads`` was before orjson and what it still falls back to, so the ratio is
old against new in one run. Bodies range from a stream chunk to a 30 KB tool
list; ``dumps`` (``json`` against orjson) is shown for reference only: the
gateway's encoders are not ``strict_json``'s.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import orjson

from edgeproxy import strict_json


def _message(i: int) -> dict[str, str]:
    return {"role": ("user", "assistant")[i % 2], "content": f"Tell me about item {i}. " * 20}


_ITEMS = {"type": "array", "items": {"type": "string", "enum": ["x", "y", "z"]}}
_PARAMETER = {"type": "object", "properties": {"a": _ITEMS, "b": {"type": "integer"}}}
TOOL = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "Look a thing up " * 5,
        "parameters": {
            "type": "object",
            "properties": {f"p{i}": _PARAMETER for i in range(20)},
            "required": ["p0"],
        },
    },
}
ANSWER = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello " * 120}}],
    "usage": {"prompt_tokens": 50, "completion_tokens": 40, "total_tokens": 90},
}
CHUNK = {
    "id": "c",
    "object": "chat.completion.chunk",
    "model": "m",
    "choices": [{"index": 0, "delta": {"content": "tok "}, "finish_reason": None}],
}
BODIES: dict[str, Any] = {
    "stream chunk": CHUNK,
    "chat request": {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
    "chat answer": ANSWER,
    "chat, 40 turns": {"model": "m", "messages": [_message(i) for i in range(40)]},
    "chat + 8 tools": {
        "model": "m",
        "messages": [_message(i) for i in range(10)],
        "tools": [TOOL] * 8,
    },
}


def per_call(parse: Callable[[Any], Any], raw: Any, count: int, rounds: int = 7) -> float:
    """Microseconds of CPU per call: the median of ``rounds`` rounds of ``count`` calls."""
    for _ in range(max(10, count // 20)):
        parse(raw)
    figures = []
    for _ in range(rounds):
        started = time.process_time()
        for _ in range(count):
            parse(raw)
        figures.append((time.process_time() - started) * 1e6 / count)
    return statistics.median(figures)


def main() -> None:
    def stdlib(raw: bytes) -> Any:
        return strict_json._json_loads(raw, strict_json.MAX_DEPTH)

    def json_dumps(value: Any) -> bytes:
        return json.dumps(value, ensure_ascii=False, allow_nan=False).encode()

    print(
        f"{'body':<16} {'bytes':>6} {'json+check':>11} {'loads':>9} {'ratio':>6}"
        f" {'dumps json':>11} {'orjson':>8} {'ratio':>6}"
    )
    for name, value in BODIES.items():
        raw = json.dumps(value).encode()
        assert strict_json.loads(raw) == stdlib(raw) == value
        count = max(200, 2_000_000 // len(raw))
        old, new = per_call(stdlib, raw, count), per_call(strict_json.loads, raw, count)
        slow, fast = per_call(json_dumps, value, count), per_call(orjson.dumps, value, count)
        print(
            f"{name:<16} {len(raw):>6} {old:>9.1f}us {new:>7.1f}us {new / old:>5.2f}x"
            f" {slow:>9.1f}us {fast:>6.1f}us {fast / slow:>5.2f}x"
        )


if __name__ == "__main__":
    main()
