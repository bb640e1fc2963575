"""The EMF documents ``PowertoolsTelemetry`` writes are the ones Powertools itself writes."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

from edgeproxy.service.telemetry import PowertoolsTelemetry

COUNTS: list[tuple[str, float, dict[str, str]]] = [
    ("Invocations", 1, {}),
    ("Requests", 1, {}),
    ("Requests", 2, {}),
    ("Attempts", 1, {"deployment": "a", "model": "gpt", "outcome": "success"}),
    ("Attempts", 1, {"deployment": "a", "model": "gpt", "outcome": "success"}),
    ("Failures", 1, {"deployment": "b", "model": "gpt", "class": "timeout"}),
    ("Anomalies", 1, {"deployment": "", "model": "gpt"}),
    ("Anomalies", 1, {"deployment": " ", "model": "gpt"}),
]


def documents(text: str) -> list[dict[str, Any]]:
    """The EMF documents in ``text``, their timestamps taken out."""
    found = []
    for line in text.splitlines():
        document = json.loads(line)
        assert isinstance(document["_aws"].pop("Timestamp"), int)
        found.append(document)
    return found


def powertools_output(counts: list[tuple[str, float, dict[str, str]]]) -> list[str]:
    """What Powertools' ``EphemeralMetrics`` prints for the same sums, one set per document."""
    sums: dict[tuple[tuple[str, str], ...], dict[str, float]] = {}
    for name, value, dimensions in counts:
        per_set = sums.setdefault(tuple(sorted(dimensions.items())), {})
        per_set[name] = per_set.get(name, 0.0) + value
    lines = []
    for dimensions, totals in sums.items():
        metrics = EphemeralMetrics(namespace="edgeproxy", service="edgeproxy")
        for key, value in dimensions:
            with warnings.catch_warnings():  # it warns of the blank values it leaves out
                warnings.simplefilter("ignore")
                metrics.add_dimension(name=key, value=value)
        for name, total in totals.items():
            metrics.add_metric(name=name, unit=MetricUnit.Count, value=total)
        lines.append(json.dumps(metrics.serialize_metric_set(), separators=(",", ":")))
    return lines


def test_flush_writes_what_powertools_writes(capsys: pytest.CaptureFixture[str]) -> None:
    telemetry = PowertoolsTelemetry(namespace="edgeproxy", service="edgeproxy")
    for name, value, dimensions in COUNTS:
        telemetry.count(name, value, **dimensions)
    telemetry.flush()
    ours = capsys.readouterr().out
    expected = powertools_output(COUNTS)
    capsys.readouterr()  # Powertools' own warnings, if any
    assert documents(ours) == documents("\n".join(expected))
    assert len(ours.splitlines()) == 5  # one document per dimension set


def test_a_flush_with_nothing_pending_writes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    telemetry = PowertoolsTelemetry(namespace="edgeproxy", service="edgeproxy")
    telemetry.count("Requests")
    telemetry.flush()
    capsys.readouterr()
    telemetry.flush()
    assert capsys.readouterr().out == ""


def test_more_than_a_hundred_metrics_are_split_over_documents(
    capsys: pytest.CaptureFixture[str],
) -> None:
    telemetry = PowertoolsTelemetry(namespace="edgeproxy", service="edgeproxy")
    for index in range(150):
        telemetry.count(f"M{index}")
    telemetry.flush()
    found = documents(capsys.readouterr().out)
    assert [len(d["_aws"]["CloudWatchMetrics"][0]["Metrics"]) for d in found] == [100, 50]
    assert sum(len([k for k in d if k.startswith("M")]) for d in found) == 150


def test_each_document_is_stamped_by_the_clock_it_is_given(
    capsys: pytest.CaptureFixture[str],
) -> None:
    telemetry = PowertoolsTelemetry(
        namespace="edgeproxy", service="edgeproxy", clock=lambda: 1_800_000_000.25
    )
    telemetry.count("Requests", 1, model="m")
    telemetry.flush()
    [doc] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert doc["_aws"]["Timestamp"] == 1_800_000_000_250
