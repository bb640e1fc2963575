"""``import-litellm`` on configs in the shape of LiteLLM's own examples (tests/fixtures/litellm).

Every entry converts or is an error naming it as written; every setting not
carried over is a warning; ``--strict`` fails on either; what is written loads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from edgeproxy import cli
from edgeproxy.config.litellm_import.checks import name_entries
from edgeproxy.config.litellm_import.router import convert
from edgeproxy.config.loader import TABLE_SECTIONS, parse_config
from edgeproxy.errors import ConfigError

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "litellm"
FILES = sorted(p.name for p in CORPUS.glob("*.yaml"))


def run(capsys: pytest.CaptureFixture[str], path: Path, *flags: str) -> tuple[int, str, list[str]]:
    status = cli.main(["config", "import-litellm", str(path), *flags])
    out, err = capsys.readouterr()
    return status, out, err.splitlines()


def source(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((CORPUS / name).read_text())
    return loaded


@pytest.mark.parametrize("name", FILES)
def test_each_file_converts_and_loads(
    name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LLAMA_API_BASE", raising=False)
    status, out, err = run(capsys, CORPUS / name)
    assert status == 0, err
    document = yaml.safe_load(out)
    # The project's own loader takes it (organizations and teams are the table's, as
    # load_config_file leaves them to config load).
    parse_config({k: v for k, v in document.items() if k not in TABLE_SECTIONS}, name)
    assert all(line.startswith(("warning: ", "error: ")) for line in err[:-1])
    assert err[-1].startswith("converted ")


@pytest.mark.parametrize("name", FILES)
def test_every_entry_is_converted_or_named_in_an_error(name: str) -> None:
    entries = source(name)["model_list"]
    result = convert(source(name), {})
    assert len(result.origins) == len(result.document["deployments"])
    for index, entry in enumerate(entries):
        written = f"model_list[{index}] (model_name: {entry['model_name']}, "
        written += f"model: {entry['litellm_params']['model']})"
        converted = [o for o in result.origins if o == written]
        failed = [e for e in result.errors if e.startswith(written + ": ")]
        assert len(converted) + len(failed) == 1, (written, result.errors)


@pytest.mark.parametrize("name", FILES)
def test_strict_fails_on_any_warning_and_writes_nothing(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run(capsys, CORPUS / name, "--strict")
    assert status == 1  # every example carries something that does not map
    assert out == ""
    assert err[-1].startswith("--strict: not written")


def test_strict_passes_a_file_that_maps_exactly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "clean.yaml"
    # A key variable under the credential prefix: nothing needs restating.
    entry = {
        "model": "openai/gpt-4o",
        "api_key": "os.environ/EDGEPROXY_CRED_OPENAI_API_KEY",
        "rpm": 10,
    }
    path.write_text(yaml.safe_dump({"model_list": [{"model_name": "g", "litellm_params": entry}]}))
    status, out, err = run(capsys, path, "--strict")
    assert status == 0, err
    assert yaml.safe_load(out)["deployments"][0]["rpm_limit"] == 10


def test_proxy_server_config_names_what_does_not_convert() -> None:
    result = convert(source("proxy_server_config.yaml"), {})
    assert result.errors == [
        "model_list[4] (model_name: sagemaker-completion-model, model: sagemaker/berri-"
        "benchmarking-Llama-2-70b-chat-hf-4): provider 'sagemaker' has no edgeproxy kind; "
        "not converted",
        "model_list[6] (model_name: dall-e-2, model: azure/): litellm_params.model 'azure/' "
        "names no model; not converted",
        "model_list[7] (model_name: openai-dall-e-3, model: dall-e-3): a model name of no known "
        "provider has no edgeproxy kind; not converted",
        "model_list[13] (model_name: *, model: openai/*): a wildcard (any model of a provider) "
        "has no equivalent; not converted",
    ]
    deps = {d["model"]: d for d in result.document["deployments"]}
    assert deps["llama3"]["base_url"] == "http://localhost:11434/v1"  # ollama: its /v1 API
    assert deps["openrouter-claude"]["credential"] == "env:EDGEPROXY_CRED_OPENROUTER_API_KEY"
    assert deps["text-embedding-ada-002"]["operations"] == ["embeddings"]
    assert deps["gpt-instruct"]["operations"] == ["completions"]
    assert "sk-1234" not in yaml.safe_dump(result.document)
    assert "fake-key" not in yaml.safe_dump(result.document)  # literal keys are never copied
    warnings = "\n".join(result.warnings)
    assert "general_settings: store_model_in_db has no equivalent" in warnings
    assert "litellm_settings: cache has no equivalent" in warnings


def test_reliability_settings_carry_over_from_either_section() -> None:
    result = convert(source("reliability.yaml"), {})
    router = result.document["router"]
    # allowed_fails / cooldown_time under litellm_settings, as LiteLLM's docs write them.
    assert router["circuit"] == {"allowed_fails": 3, "cooldown_seconds": 30}
    chat = router["execution_policies"]["chat"]["json"]
    assert (chat["response_ms"], chat["max_attempts"]) == (30_000, 3)  # router_settings win
    assert (
        "litellm_settings.num_retries: 3 is overridden by router_settings.num_retries 2"
        in result.warnings
    )
    zephyr = [d for d in result.document["deployments"] if d["model"] == "zephyr-beta"]
    assert [d["base_url"] for d in zephyr] == [f"http://0.0.0.0:800{i}/v1" for i in (1, 2, 3)]
    assert {"model": "zephyr-beta", "reason": "general", "to": ["gpt-3.5-turbo"]} in (
        result.document["fallbacks"]
    )


def test_entry_level_limits_carry_over() -> None:
    result = convert(source("entry_limits.yaml"), {})
    deps = result.document["deployments"]
    assert (deps[0]["rpm_limit"], deps[0]["tpm_limit"]) == (500, 200_000)
    assert deps[1]["rpm_limit"] == 50  # both set: the lower, with a warning
    assert any("rpm is set twice (100 and 50)" in w for w in result.warnings)
    assert deps[2]["tpm_limit"] == 1_000_000


def test_environment_default_keys_become_references_with_a_warning() -> None:
    result = convert(source("env_default_keys.yaml"), {"GROQ_API_KEY": "set"})
    expected = {
        "router-claude": "OPENROUTER_API_KEY",
        "groq-llama": "GROQ_API_KEY",
        "together-mixtral": "TOGETHERAI_API_KEY",
        "mistral-small": "MISTRAL_API_KEY",
        "deepseek-chat": "DEEPSEEK_API_KEY",
        "fireworks-llama": "FIREWORKS_AI_API_KEY",
        "grok": "XAI_API_KEY",
        "sonar": "PERPLEXITYAI_API_KEY",
        "deepinfra-llama": "DEEPINFRA_API_KEY",
        "gpt-4o-mini": "OPENAI_API_KEY",
        "claude-haiku": "ANTHROPIC_API_KEY",
    }
    deps = {d["model"]: d for d in result.document["deployments"]}
    for model, variable in expected.items():
        # Under the credential prefix (config.credential_refs), with a warning saying so.
        assert deps[model]["credential"] == f"env:EDGEPROXY_CRED_{variable}"
        assert any(f"became env:EDGEPROXY_CRED_{variable}" in w for w in result.warnings)
        [warning] = [w for w in result.warnings if f"model_name: {model}," in w]
        assert f"LiteLLM reads ${variable} by default" in warning
        assert ("not set in this shell" in warning) is (variable != "GROQ_API_KEY")
    assert "credential" not in deps["local-vllm"]  # a server of one's own: no key assumed
    # No credential warning for it (its private address is stated in gateway.egress.allow).
    assert not any("local-vllm" in w and "credential" in w for w in result.warnings)


def test_load_balancer_deployments_are_not_left_without_a_credential() -> None:
    # LiteLLM's example leaves api_key empty: LiteLLM then reads AZURE_API_KEY. Converted as
    # it was (no credential, no warning) the pool loaded, showed "available" and got 401s.
    result = convert(source("load_balancer.yaml"), {})
    deps = result.document["deployments"]
    assert [d.get("credential") for d in deps] == ["env:EDGEPROXY_CRED_AZURE_API_KEY"] * 3 + [
        "env:EDGEPROXY_CRED_OPENAI_API_KEY"
    ]
    assert [d["rpm_limit"] for d in deps] == [6, 6, 1440, 100]
    for index in range(4):
        assert any(
            w.startswith(f"model_list[{index}] ") and "no api_key" in w for w in result.warnings
        )


def test_a_pool_that_cannot_authenticate_is_a_warning() -> None:
    entries = [
        {"model_name": "p", "litellm_params": {"model": "gpt-4o", "api_key": "sk-literal"}},
        {"model_name": "p", "litellm_params": {"model": "claude-3-5-haiku", "api_key": "sk-b"}},
    ]
    result = convert({"model_list": entries}, {})
    assert (
        "pool p: none of its 2 deployments has a credential: it would show available and "
        "answer every request with the upstream's 401" in result.warnings
    )


def test_an_invalid_value_fails_its_entry_not_the_file() -> None:
    entries = [
        {"model_name": "ok", "litellm_params": {"model": "gpt-4o", "api_key": "os.environ/K"}},
        {
            "model_name": "bad",
            "litellm_params": {"model": "openai/x", "api_base": "ftp://host/v1"},
        },
    ]
    result = convert({"model_list": entries}, {})
    assert [d["model"] for d in result.document["deployments"]] == ["ok"]
    [error] = result.errors
    assert error.startswith("model_list[1] (model_name: bad, model: openai/x): converts to an ")
    assert "base_url" in error


def test_a_whole_document_error_names_the_entries_behind_its_paths() -> None:
    document = {"deployments": [{"id": "a"}, {"id": "b"}]}
    with pytest.raises(ConfigError) as caught:
        parse_config(document, "converted")
    origins = [
        "model_list[0] (model_name: x, model: m0)",
        "model_list[3] (model_name: y, model: m3)",
    ]
    named = name_entries(str(caught.value), origins)
    assert "deployments[1] (from model_list[3] (model_name: y, model: m3))" in named
    assert "deployments[0] (from model_list[0] (model_name: x, model: m0))" in named


def test_odd_entries_are_named_never_a_traceback() -> None:
    entries: list[Any] = [
        "just a string",
        {"model_name": "m", "litellm_params": {"model": "gpt-4o"}, "model_info": ["x"]},
        {"model_name": 5, "litellm_params": {"model": "gpt-4o"}},
        {"model_name": "b", "litellm_params": {"model": "bedrock/x.y", "api_key": "os.environ/K"}},
    ]
    result = convert({"model_list": entries}, {})
    assert result.errors == [
        "model_list[0]: not a mapping; not converted",
        "model_list[2] (model: gpt-4o): needs model_name and litellm_params; not converted",
    ]
    assert "model_list[1] (model_name: m, model: gpt-4o): model_info is not a mapping; ignored" in (
        result.warnings
    )
    assert any(
        w.startswith("model_list[3] (model_name: b, model: bedrock/x.y): api_key dropped")
        for w in result.warnings
    )
    parse_config(result.document, "converted")
