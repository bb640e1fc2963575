"""The docs' deploy cost tables are ``bench/deploy_cost.py``'s output, on the stack's real defaults:
the per-request table in docs/deploying.md, the item sizes in docs/performance.md."""

from __future__ import annotations

from pathlib import Path

from bench.deploy_cost import Stack, item_bytes, items_table, table

from edgeproxy.config.request_log import RequestLogSettings
from edgeproxy.config.router import StickySettings
from edgeproxy_dev.template import load_template

ROOT = Path(__file__).resolve().parents[3]


def test_the_docs_hold_the_generated_tables() -> None:
    assert table() in (ROOT / "docs" / "deploying.md").read_text(encoding="utf-8")
    assert items_table() in (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")


def test_the_tables_inputs_are_the_templates_and_the_configurations_defaults() -> None:
    template = load_template(ROOT / "template.yaml")
    resources, stack = template["Resources"], Stack()
    assert template["Parameters"]["LogRetentionDays"]["Default"] == stack.log_retention_days
    for function in ("ProxyFunction", "StreamFunction"):
        assert resources[function]["Properties"]["MemorySize"] / 1024 == stack.memory_gb
    pitr = resources["StateTable"]["Properties"]["PointInTimeRecoverySpecification"]
    assert pitr["PointInTimeRecoveryEnabled"] is stack.pitr
    log = RequestLogSettings()
    assert (log.retention_days, log.report_days) == (stack.record_retention_days, stack.report_days)
    assert StickySettings().idle_ttl_seconds == stack.binding_ttl_s


def test_item_sizes_follow_dynamodbs_rules() -> None:
    assert item_bytes({"pk": {"S": "log#1"}}) == 2 + 5
    assert item_bytes({"n": {"N": "123"}}) == 1 + 2 + 1  # one byte per two digits, plus one
    assert item_bytes({"n": {"N": "0.0100"}}) == 1 + 1 + 1  # leading and trailing zeros trimmed
    assert item_bytes({"ok": {"BOOL": True}, "l": {"L": [{"S": "ab"}]}}) == 3 + 1 + 3 + 1 + 2
    assert item_bytes({"m": {"M": {"k": {"S": "v"}}}}) == 1 + 3 + 1 + 1 + 1
