"""The strategy catalogue: the registry's view for the admin API, the CLI and the docs."""

from __future__ import annotations

import argparse
import io
import json
import re
from pathlib import Path

from edgeproxy.cli.strategies import run
from edgeproxy.config.router import RouterSettings
from edgeproxy.config.strategies import Strategy
from edgeproxy.routing.ordering.catalogue import catalogue, markdown_table

README = Path(__file__).resolve().parents[3] / "docs" / "configuration.md"
BLOCK = re.compile(r"<!-- strategies:begin -->\n(.*?)<!-- strategies:end -->", re.S)


def test_the_readme_table_is_the_registry() -> None:
    found = BLOCK.search(README.read_text())
    assert found is not None, "docs/configuration.md lost its strategies table markers"
    assert found.group(1).splitlines() == markdown_table(), "run `edgeproxy strategies`"


def test_every_strategy_is_listed_once_in_registry_order() -> None:
    names = [row["name"] for row in catalogue()]
    assert names == [s.value for s in Strategy]


def test_with_settings_it_marks_the_default_and_the_configured_values() -> None:
    router = RouterSettings.model_validate(
        {"strategy": "least-busy", "strategy_params": {"least-busy": {"intervene_inflight": 2}}}
    )
    rows = {row["name"]: row for row in catalogue(router)}
    assert [n for n, row in rows.items() if row["default"]] == ["least-busy"]
    assert rows["least-busy"]["configured"] == {"intervene_inflight": 2}
    assert rows["simple-shuffle"]["configured"] == {}


def test_the_cli_prints_the_table_or_json() -> None:
    out = io.StringIO()
    assert run(argparse.Namespace(json=False), out) == 0
    assert out.getvalue().splitlines() == markdown_table()
    out = io.StringIO()
    run(argparse.Namespace(json=True), out)
    assert json.loads(out.getvalue()) == {"strategies": catalogue()}
