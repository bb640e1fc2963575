"""The operating guide's table of metric names is the code's: each OTLP instrument
(``service/metrics/otlp.py``) beside the name ``/metrics`` serves it under
(``service/metrics/prometheus.py``; prometheus_client appends a counter's ``_total``)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
METRICS = ROOT / "shared" / "edgeproxy" / "service" / "metrics"
GUIDE = ROOT / "docs" / "operating.md"
ROW = re.compile(r"^\| `([a-z_.]+)` \|[^|]*\| `([a-z_]+)` \|$", re.M)


def _named(path: Path, makers: set[str]) -> dict[str, str]:
    """Each instrument ``path`` makes: its name, by the maker's name (counter, gauge...)."""
    found = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        func = node.func
        maker = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        first = node.args[0]
        if maker in makers and isinstance(first, ast.Constant) and isinstance(first.value, str):
            found[first.value] = maker
    return found


def _otlp() -> dict[str, str]:
    return _named(
        METRICS / "otlp.py", {"create_counter", "create_gauge", "create_histogram", "histogram"}
    )


def _prometheus() -> set[str]:
    made = _named(METRICS / "prometheus.py", {"counter", "histogram", "Gauge"})
    return {name + "_total" if maker == "counter" else name for name, maker in made.items()}


def test_the_guide_names_every_instrument_under_both_its_names() -> None:
    rows = dict(ROW.findall(GUIDE.read_text()))
    assert set(rows) == set(_otlp())
    assert set(rows.values()) == _prometheus()
    for otlp, served in rows.items():
        # The same metric: the dotted name with underscores, then a unit or a counter's suffix.
        assert served.startswith(otlp.replace(".", "_")), (otlp, served)


def test_the_readers_see_the_instruments() -> None:
    assert len(_otlp()) >= 10
    assert "edgeproxy_requests_total" in _prometheus()
    assert _otlp()["edgeproxy.circuit.state"] == "create_gauge"
