"""Router presets: what each sets, what explicit settings override, and that the docs' table
of them (docs/configuration.md) is what the model produces."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from edgeproxy.config.deployment import ProviderKind
from edgeproxy.config.loader import from_document, to_document
from edgeproxy.config.models import GatewayConfig
from edgeproxy.config.presets import Preset
from edgeproxy.config.router import CircuitSettings, Continuation, RouterSettings
from edgeproxy.service.admin.config_changes import router_settings
from edgeproxy.service.admin.config_edit import as_document, validated

README = Path(__file__).resolve().parents[3] / "docs" / "configuration.md"
TABLE_HEADING = "### Presets (`router.preset`)"


def seconds(ms: int | None) -> str:
    return "—" if ms is None else f"{ms // 1000} s"


def cell(value: Any) -> str:
    """A setting's value as the README's table writes it."""
    if isinstance(value, dict) and "response_ms" in value:  # a deadline: the matrix's notation
        return (
            f"{seconds(value['response_ms'])} / {seconds(value['idle_ms'])} / "
            f"{seconds(value['total_ms'])} / {value['max_attempts']}"
        )
    return "`null`" if value is None else f"`{value}`"


def settings_of(preset: Preset) -> dict[str, str]:
    """Every router setting under ``preset``, by dotted path (a deadline is one setting)."""
    out: dict[str, str] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict) and "response_ms" not in value:
            for key, inner in value.items():
                walk(f"{prefix}.{key}" if prefix else key, inner)
        else:
            out[prefix] = cell(value)

    walk("", RouterSettings(preset=preset).model_dump(mode="json", by_alias=True))
    del out["preset"]
    return out


def changed_by_presets() -> dict[str, dict[Preset, str]]:
    """The settings some preset sets differently from another, with each preset's value."""
    every = {p: settings_of(p) for p in Preset}
    paths = every[Preset.PATIENT].keys()
    return {
        path: {p: every[p][path] for p in Preset}
        for path in paths
        if len({every[p][path] for p in Preset}) > 1
    }


def readme_table() -> tuple[list[str], dict[str, list[str]]]:
    """The README's preset table: its preset columns, and each row's cells by setting."""
    text = README.read_text()
    assert TABLE_HEADING in text
    lines = text.split(TABLE_HEADING, 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows: list[list[str]] = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    header, _rule, *body = rows
    by_setting = {re.sub(r"^`|`$", "", r[0]): r[1:] for r in body}
    return [re.sub(r"^`|`$", "", h) for h in header[1:]], by_setting


def test_the_readme_documents_every_setting_each_preset_changes_as_the_model_has_it() -> None:
    columns, rows = readme_table()
    assert columns == [p.value for p in Preset]
    expected = changed_by_presets()
    assert sorted(rows) == sorted(expected)  # every changed setting, and nothing else
    for path, cells in rows.items():
        assert cells == [expected[path][Preset(c)] for c in columns], path


def test_the_patient_preset_is_the_specs_defaults() -> None:
    assert RouterSettings() == RouterSettings(preset=Preset.PATIENT)
    assert RouterSettings().circuit == CircuitSettings()
    assert RouterSettings().continuation is Continuation.OFF
    chat = RouterSettings().execution_policies["chat"]
    assert (chat.json_.response_ms, chat.json_.total_ms, chat.stream.idle_ms) == (
        600_000,
        1_800_000,
        600_000,
    )


def test_interactive_is_tight_continues_and_probes_often() -> None:
    settings = RouterSettings(preset=Preset.INTERACTIVE)
    assert settings.circuit.max_probe_interval_seconds == 5
    assert settings.circuit.throttle_exact_retry_after is True
    assert settings.continuation is Continuation.PREFILL
    chat = settings.execution_policies["chat"]
    assert (chat.json_.response_ms, chat.json_.total_ms) == (60_000, 120_000)
    assert (chat.stream.response_ms, chat.stream.idle_ms) == (15_000, 30_000)
    patient = RouterSettings().execution_policies
    for op, policy in settings.execution_policies.items():
        for mine, theirs in (
            (policy.json_, patient[op].json_),
            (policy.stream, patient[op].stream),
        ):
            assert mine.total_ms < theirs.total_ms, op
            assert mine.response_ms < theirs.response_ms, op


def test_patient_keeps_000s_knob_meanings() -> None:
    # 000: a failed probe's cooldown grows to max_cooldown_seconds, and
    # throttle_cooldown_seconds is the floor of a capacity circuit.
    circuit = RouterSettings().circuit
    assert circuit.max_probe_interval_seconds is None
    assert circuit.throttle_exact_retry_after is False
    assert RouterSettings(preset=Preset.PATIENT).circuit == circuit


def test_explicit_settings_win_over_the_preset() -> None:
    row = {"response_ms": 9_000, "total_ms": 9_000, "max_attempts": 1}
    settings = RouterSettings.model_validate(
        {
            "preset": "interactive",
            "circuit": {
                "max_probe_interval_seconds": None,
                "cooldown_seconds": 9,
                "throttle_exact_retry_after": False,
            },
            "continuation": "off",
            "execution_policies": {"chat": {"json": row, "stream": row}},
        }
    )
    assert settings.circuit.max_probe_interval_seconds is None  # an explicit null stands
    assert settings.circuit.throttle_exact_retry_after is False
    assert settings.circuit.cooldown_seconds == 9
    assert settings.continuation is Continuation.OFF
    assert settings.execution_policies["chat"].json_.total_ms == 9_000
    # The rows left out are the preset's (the matrix stays exhaustive).
    assert settings.execution_policies["embeddings"].json_.total_ms == 30_000


def test_an_unknown_preset_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="preset"):
        RouterSettings.model_validate({"preset": "hasty"})


def dep(id: str, model: str, *, prefill: bool) -> dict[str, Any]:
    return {
        "id": id,
        "model": model,
        "provider": ProviderKind.OPENAI.value,
        "base_url": "https://api.example.test/v1",
        "upstream_model": "gpt-4o",
        "supports_prefill": prefill,
    }


def gateway(router: dict[str, Any], **more: Any) -> GatewayConfig:
    return GatewayConfig.model_validate(
        {
            "router": router,
            "deployments": [
                dep("a", "capable", prefill=True),
                dep("b", "plain", prefill=False),
                dep("c", "spare", prefill=True),
            ],
            **more,
        }
    )


def test_interactive_continues_where_a_capable_deployment_exists() -> None:
    chains = [
        {"model": "capable", "to": ["plain", "spare"]},
        {"model": "plain", "to": ["spare"]},
    ]
    interactive = gateway({"preset": "interactive"}, fallbacks=chains)
    assert interactive.continuation_targets("capable") == ["capable", "spare"]
    assert interactive.continuation_targets("plain") == ["spare"]  # not itself: none can
    patient = gateway({}, fallbacks=chains)
    assert patient.continuation_targets("capable") == []
    # A pool's or a chain's own setting wins over the preset's either way.
    chains[0]["continuation"] = "prefill"
    pools = {"capable": {"continuation": "off"}}
    mixed = gateway({"preset": "interactive"}, fallbacks=chains, pools=pools)
    assert mixed.continuation_targets("capable") == ["plain", "spare"]
    opted = gateway({}, pools={"plain": {"continuation": "prefill"}})
    assert opted.continuation_targets("plain") == ["plain"]


def test_a_stored_interactive_configuration_reads_back_the_same() -> None:
    config = gateway({"preset": "interactive", "circuit": {"cooldown_seconds": 7}})
    assert from_document(to_document(config)) == config


def test_changing_the_preset_over_the_admin_api_takes_the_new_presets_values() -> None:
    doc = as_document(gateway({"circuit": {"cooldown_seconds": 7}}))
    router_settings({"preset": "interactive", "circuit": {"allowed_fails": 1}})(doc)
    settings = validated(doc).router
    assert settings.preset is Preset.INTERACTIVE
    assert settings.circuit.max_probe_interval_seconds == 5
    assert settings.execution_policies["chat"].json_.total_ms == 120_000
    assert (settings.circuit.cooldown_seconds, settings.circuit.allowed_fails) == (7, 1)
    # And back: the patient defaults return, what the patch sets wins.
    router_settings({"preset": "patient", "continuation": "prefill"})(doc)
    back = validated(doc).router
    assert back.circuit.max_probe_interval_seconds is None
    assert back.circuit.throttle_exact_retry_after is False
    assert back.execution_policies["chat"].json_.total_ms == 1_800_000
    assert back.continuation is Continuation.PREFILL
    # A patch that leaves the preset alone keeps every value.
    router_settings({"preset": "patient", "strategy": "least-busy"})(doc)
    assert validated(doc).router.continuation is Continuation.PREFILL


def test_naming_the_preset_a_document_stored_before_presets_already_had_changes_nothing() -> None:
    doc = as_document(gateway({"circuit": {"max_probe_interval_seconds": 60}}))
    del doc["router"]["preset"]  # as stored by a release without presets
    router_settings({"preset": "patient"})(doc)
    assert validated(doc).router.circuit.max_probe_interval_seconds == 60
