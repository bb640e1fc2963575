"""Loading configuration files: strict keys, clear messages, a faithful stored form."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from edgeproxy.config.loader import from_document, load_config_file, to_document
from edgeproxy.config.models import GatewayConfig
from edgeproxy.config.policies import Operation, default_execution_policies
from edgeproxy.errors import ConfigError

ROOT = Path(__file__).resolve().parents[3]

GOOD = """
deployments:
  - id: a
    model: fast-chat
    provider: openai_compat
    base_url: http://127.0.0.1:9/v1
    upstream_model: m
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "edge.yaml"
    path.write_text(text)
    return path


def test_the_example_configuration_loads_and_round_trips() -> None:
    config = load_config_file(ROOT / "infra" / "config.example.yaml")
    assert {"fast-chat", "text-embed", "demo-failover"} <= set(config.public_models())
    assert from_document(to_document(config)) == config


def test_an_unknown_key_is_named_with_its_file_and_path(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD + "    wieght: 2\n")
    with pytest.raises(ConfigError) as caught:
        load_config_file(path)
    assert str(caught.value) == f"{path}: deployments[0].wieght: extra inputs are not permitted"


def test_a_misspelt_router_knob_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD + "router:\n  circuit:\n    allowed_failz: 2\n")
    with pytest.raises(ConfigError, match=r"router\.circuit\.allowed_failz"):
        load_config_file(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("deployments: [1, 2", "not valid YAML"),
        ("- just\n- a list\n", "top level must be a mapping"),
        (GOOD + "    weight: -1\n", "deployments[0].weight"),
        (GOOD + "    provider: vertex\n", "deployments[0].provider"),
        (GOOD.replace("http://", "ftp://"), "deployments[0].base_url"),
    ],
)
def test_invalid_files_fail_with_the_location(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config_file(write(tmp_path, text))
    assert message in str(caught.value)


def test_a_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config_file(tmp_path / "absent.yaml")


def test_a_document_stored_before_an_operation_existed_still_loads() -> None:
    stored = json.loads(to_document(GatewayConfig()))
    del stored["router"]["execution_policies"]["completions"]  # as an older release stored it
    config = from_document(json.dumps(stored))
    assert (
        config.router.execution_policies[Operation.COMPLETIONS]
        == (default_execution_policies()[Operation.COMPLETIONS])
    )


def test_a_file_must_still_list_every_operation(tmp_path: Path) -> None:
    matrix = json.loads(to_document(GatewayConfig()))["router"]["execution_policies"]
    del matrix["completions"]
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"router": {"execution_policies": matrix}}))
    with pytest.raises(ConfigError, match="missing: completions"):
        load_config_file(path)


PUBLIC = GOOD.replace("http://127.0.0.1:9/v1", "https://api.example.com/v1")


def test_enabled_false_in_the_file_drains_and_survives_the_stored_form(tmp_path: Path) -> None:
    config = load_config_file(write(tmp_path, PUBLIC + "    enabled: false\n"))
    assert config.deployments[0].enabled is False
    assert from_document(to_document(config)).deployments[0].enabled is False
    assert load_config_file(write(tmp_path, PUBLIC)).deployments[0].enabled is True


def test_enabled_takes_only_a_boolean(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"deployments\[0\]\.enabled"):
        load_config_file(write(tmp_path, PUBLIC + "    enabled: maybe\n"))
