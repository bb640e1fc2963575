"""What the cost table's measured inputs are: log bytes per invocation and item sizes.

A JSON and a stream request go through the proxy function's Lambda handler
(as ``test_events.py`` runs it) several times; each warm invocation's bytes on
stdout and stderr (Powertools' log lines and the EMF documents, all of which
CloudWatch Logs ingests) must be what ``bench/deploy_cost.py`` prices, and so
must the DynamoDB size of each item kind the requests left in the table.
"""

from __future__ import annotations

import json
import logging
import math
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from bench.deploy_cost import MEASURED, item_bytes

from tests.fixtures.table import TableView
from tests.handlers.test_events import EVENTS, Context, environment, load

__all__ = ["environment"]  # the fixture, imported to be used here

DAY_S = 86400
SECOND = re.compile(r"s\d\d[a-z]")


def _kind(item: dict[str, Any]) -> str:
    pk, sk = item["pk"]["S"], item["sk"]["S"]
    if pk.startswith("log#"):
        return "record"
    if pk.startswith("usage#"):
        return "aggregate"
    if pk.startswith("dep#") and sk.startswith("usage#"):
        return "counter"
    if pk.startswith("bind#"):
        return "binding"
    return "other"


def _rebind_stdout(logger: logging.Logger) -> None:
    """Point ``logger``'s stdout handlers (Powertools') at the current ``sys.stdout``."""
    for each in logger.handlers:
        if isinstance(each, logging.StreamHandler) and each.stream is not sys.stderr:
            each.setStream(sys.stdout)


def test_each_request_logs_and_stores_what_the_cost_table_prices(
    environment: ThreadPoolExecutor, table: TableView, capfd: pytest.CaptureFixture[str]
) -> None:
    handler = environment.submit(load, "proxy", "lambda_log_bytes").result().handler
    # A Powertools Logger of a name already built in this process (an earlier test's
    # handler) keeps that one's stream handler, bound to the stdout of the earlier test's
    # capture: point it at this process's stdout, as Lambda's fresh process has it.
    _rebind_stdout(logging.getLogger("edgeproxy"))
    logged: dict[str, list[int]] = {"chat.json": [], "chat_stream.json": []}
    lines: dict[str, str] = {}
    try:
        for name in ["chat.json", "chat_stream.json"] * 4:
            event = json.loads((EVENTS / name).read_text())
            capfd.readouterr()
            response = environment.submit(handler, event, Context()).result()
            assert response["statusCode"] == 200
            out, err = capfd.readouterr()
            logged[name].append(len(out.encode()) + len(err.encode()))
            lines[name] = out + err
    finally:
        environment.submit(handler.close).result()
    # The first invocation is the cold start's (its own lines); the warm ones are the price.
    for name, expected in (
        ("chat.json", MEASURED.json_log_bytes),
        ("chat_stream.json", MEASURED.stream_log_bytes),
    ):
        warm = logged[name][1:]
        assert all(math.isclose(n, expected, rel_tol=0.05) for n in warm), (name, warm, lines[name])

    sizes: dict[str, list[int]] = {}
    items = table.scan()
    for item in items:
        sizes.setdefault(_kind(item), []).append(item_bytes(item))
    # A minute bucket grows by four counters for each second that saw traffic.
    [bucket] = [i for i in items if _kind(i) == "counter"]
    per_second = {k: v for k, v in bucket.items() if SECOND.fullmatch(k)}
    seconds = {k[:3] for k in per_second}
    assert seconds
    sizes["counter"] = [item_bytes({k: v for k, v in bucket.items() if k not in per_second})]
    second_bytes = item_bytes(per_second) / len(seconds)
    assert math.isclose(second_bytes, MEASURED.counter_second_bytes, rel_tol=0.25), second_bytes
    for kind, expected in (
        ("record", MEASURED.record_bytes),
        ("aggregate", MEASURED.aggregate_bytes),
        ("counter", MEASURED.counter_bytes),
        ("binding", MEASURED.binding_bytes),
    ):
        assert sizes.get(kind), (kind, sorted(sizes))
        assert math.isclose(max(sizes[kind]), expected, rel_tol=0.10), (kind, sizes[kind])
    # The records live the request log's 30 days (the table's storage row multiplies by them).
    records = [i for i in items if _kind(i) == "record"]
    assert len(records) == 8
    for record in records:
        lives = float(record["expires_at"]["N"]) - float(record["at"]["N"])
        assert lives == pytest.approx(30 * DAY_S)
