"""``edgeproxy config import-litellm``: a representative LiteLLM config, converted and loaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from edgeproxy import cli
from edgeproxy.config.litellm_import.router import convert
from edgeproxy.config.loader import load_config_file, parse_config

SOURCE = Path(__file__).resolve().parents[2] / "fixtures" / "litellm" / "config.yaml"
ENVIRON = {"LLAMA_API_BASE": "http://10.0.0.13:8000/v1"}


def converted(environ: dict[str, str] | None = None) -> tuple[dict[str, Any], list[str]]:
    result = convert(yaml.safe_load(SOURCE.read_text()), ENVIRON if environ is None else environ)
    return result.document, result.warnings


def by_id(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {d["id"]: d for d in document["deployments"]}


def test_the_command_writes_yaml_that_loads_and_warnings_to_stderr(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLAMA_API_BASE", "http://10.0.0.13:8000/v1")
    assert cli.main(["config", "import-litellm", str(SOURCE)]) == 0
    out, err = capsys.readouterr()
    document = yaml.safe_load(out)
    assert len(document["deployments"]) == 11
    assert "sk-literal-should-not-be-copied" not in out  # literal keys are never copied
    assert "sk-in-the-file" not in out
    assert "sk-1234" not in out
    assert err.splitlines()[-1] == (
        "converted 11 deployments (5 models), 4 fallback chains; 22 warnings, "
        "2 entries not converted"
    )
    # The entry rules are stated in the output, each with a warning: the private
    # self-hosted servers are allowed by address, env keys move under the prefix.
    assert document["gateway"]["egress"]["allow"] == ["10.0.0.12", "10.0.0.13"]
    assert "warning: deployment llama-6: base_url 10.0.0.12 is not public; " in err
    creds = {d["id"]: d.get("credential") for d in document["deployments"]}
    assert creds["openai-main"] == "env:EDGEPROXY_CRED_OPENAI_API_KEY"
    assert "became env:EDGEPROXY_CRED_OPENAI_API_KEY" in err
    assert all(line.startswith(("warning: ", "error: ")) for line in err.splitlines()[:-1])
    # The whole output loads with the project's own loader, azure and bedrock included.
    path = tmp_path / "edgeproxy.yaml"
    path.write_text(out)
    config = load_config_file(path)
    assert config.public_models() == ["claude", "embed", "gpt-4o", "instruct", "llama"]


def test_openai_anthropic_and_compatible_kinds() -> None:
    deps = by_id(converted()[0])
    assert deps["openai-main"] == {
        "id": "openai-main",
        "model": "gpt-4o",
        "provider": "openai",
        "base_url": "https://api.openai.com/v1",
        "upstream_model": "gpt-4o",
        "credential": "env:EDGEPROXY_CRED_OPENAI_API_KEY",
        "rpm_limit": 500,
        "tpm_limit": 300000,
        "modalities": ["text", "image"],
        "input_price_per_mtok": 2.5,
        "output_price_per_mtok": 10.0,
        "priority": 2,  # order 1: the first tier
        "execution_policy_overrides": {
            "chat": {"json": {"response_ms": 30000}, "stream": {"response_ms": 30000}}
        },
    }
    assert deps["gpt-4o-2"]["provider"] == "openai"  # a plain gpt-* name
    assert "credential" not in deps["gpt-4o-2"]  # its key was literal
    assert deps["gpt-4o-2"]["weight"] == 2
    assert "priority" not in deps["gpt-4o-2"]  # no order: after the ordered ones
    assert deps["claude-3"]["provider"] == "anthropic"
    assert deps["claude-3"]["base_url"] == "https://api.anthropic.com/v1"
    assert deps["claude-4"]["base_url"] == "https://anthropic-proxy.internal/v1"  # claude-* name
    assert deps["claude-3"]["execution_policy_overrides"]["chat"]["json"] == {"max_attempts": 2}
    assert (deps["llama-6"]["provider"], deps["llama-6"]["base_url"]) == (
        "openai_compat",
        "http://10.0.0.12:8000/v1",
    )
    assert deps["llama-6"]["upstream_model"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert deps["llama-7"]["base_url"] == "http://10.0.0.13:8000/v1"  # os.environ/ read now
    assert deps["llama-7"]["credential"] == "env:EDGEPROXY_CRED_LLAMA_KEY"
    assert deps["llama-8"]["base_url"] == "https://api.groq.com/openai/v1"
    assert deps["instruct-9"]["operations"] == ["completions"]
    assert deps["embed-10"]["operations"] == ["embeddings"]


def test_azure_and_bedrock_entries_use_their_own_kinds() -> None:
    deps = by_id(converted()[0])
    assert deps["gpt-4o-1"] == {
        "id": "gpt-4o-1",
        "model": "gpt-4o",
        "provider": "azure",
        "base_url": "https://my-resource.openai.azure.com",
        "upstream_model": "gpt-4o-prod",
        "api_version": "2024-10-21",
        "credential": "env:EDGEPROXY_CRED_AZURE_API_KEY",
        "priority": 1,
    }
    assert deps["claude-5"] == {
        "id": "claude-5",
        "model": "claude",
        "provider": "bedrock",
        "upstream_model": "anthropic.claude-3-5-sonnet-20240620-v1:0",
        "region": "us-east-1",
    }


def test_router_settings_and_fallbacks() -> None:
    document = converted()[0]
    router = document["router"]
    assert router["strategy"] == "usage-based-tpm"
    assert router["circuit"] == {"allowed_fails": 2, "cooldown_seconds": 31}
    chat = router["execution_policies"]["chat"]
    assert chat["json"]["response_ms"] == chat["stream"]["response_ms"] == 120_000
    assert chat["json"]["max_attempts"] == 2  # num_retries 1
    assert document["fallbacks"] == [
        {"model": "gpt-4o", "reason": "general", "to": ["claude"]},
        {"model": "claude", "reason": "general", "to": ["gpt-4o"]},
        {"model": "gpt-4o", "reason": "context_window", "to": ["llama"]},
        {"model": "claude", "reason": "content_policy", "to": ["llama"]},
    ]
    parse_config(document, "converted")  # the entry rules are already stated in it


def test_every_unmapped_setting_is_a_warning() -> None:
    warnings = "\n".join(converted()[1])
    for expected in (
        "model_list[2] (model_name: gpt-4o, model: gpt-4o-mini): a literal api_key is not copied",
        "model_list[5] (model_name: claude, model: bedrock/anthropic.claude-3-5-sonnet-20240620"
        "-v1:0): litellm_params.aws_access_key_id has no equivalent",
        "model_list[6] (model_name: llama, model: hosted_vllm/meta-llama/Llama-3.1-8B-Instruct): "
        "litellm_params.temperature has no equivalent",
        "model_list[10] (model_name: embed, model: text-embedding-3-small): "
        "model_info.base_model has no equivalent",
        "router_settings: enable_pre_call_checks has no equivalent",
        "router_settings: redis_host has no equivalent",
        "model_list[4] (model_name: claude, model: claude-3-5-haiku-20241022): "
        "chat.stream.response_ms 2000000 is looser than 120000",
        "router_settings.fallbacks: claude: no deployment serves ['gemini']",
        "litellm_settings: drop_params has no equivalent",
        "litellm_settings: success_callback has no equivalent",
        "general_settings: master_key has no equivalent",
        "environment_variables: has no equivalent",
    ):
        assert expected in warnings
    # 12 settings, and 10 env: keys moved under the credential prefix (one warning each).
    assert len(converted()[1]) == 22


def test_entries_that_cannot_convert_are_errors_naming_them() -> None:
    errors = convert(yaml.safe_load(SOURCE.read_text()), ENVIRON).errors
    assert errors == [
        "model_list[11] (model_name: gemini, model: vertex_ai/gemini-1.5-pro): provider "
        "'vertex_ai' has no edgeproxy kind; not converted",
        "model_list[12] (model_name: openai/*, model: openai/*): a wildcard (any model of a "
        "provider) has no equivalent; not converted",
    ]


def test_an_api_base_that_cannot_be_read_skips_the_entry() -> None:
    result = convert(yaml.safe_load(SOURCE.read_text()), {})
    assert "llama-7" not in by_id(result.document)  # never pointed at api.openai.com instead
    assert any("$LLAMA_API_BASE is not set" in w for w in result.warnings)
    assert any(e.startswith("model_list[7] (model_name: llama") for e in result.errors)


def test_without_router_timeouts_the_default_matrix_holds() -> None:
    params = {"model": "gpt-4o", "timeout": 9000, "api_key": "os.environ/EDGEPROXY_CRED_K"}
    result = convert({"model_list": [{"model_name": "m", "litellm_params": params}]}, {})
    assert "router" not in result.document
    assert result.warnings == [
        "model_list[0] (model_name: m, model: gpt-4o): chat.json.response_ms 9000000 is looser "
        "than 600000; dropped",
        "model_list[0] (model_name: m, model: gpt-4o): chat.stream.response_ms 9000000 is "
        "looser than 600000; dropped",
    ]
    parse_config(result.document, "converted")


@pytest.mark.parametrize(
    "text", ["model_list: [\n", "just: a mapping\n", "- a list\n"], ids=["yaml", "keys", "list"]
)
def test_bad_input_is_exit_2(text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    assert cli.main(["config", "import-litellm", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("edgeproxy: ")


def _one(params: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    source = {
        "model_list": [
            {
                "model_name": "local",
                "litellm_params": {
                    "model": "openai/smollm2",
                    "api_base": "http://127.0.0.1:8080/v1",
                    **params,
                },
            }
        ]
    }
    result = convert(source, {})
    return result.document["deployments"][0], result.warnings


def test_max_parallel_requests_becomes_the_deployments_capacity_cap() -> None:
    dep, warnings = _one({"max_parallel_requests": 1})
    assert dep["max_parallel_requests"] == 1
    assert not [w for w in warnings if "max_parallel_requests" in w]
    parse_config(
        {"deployments": [dep], "gateway": {"egress": {"allow": ["127.0.0.0/8"]}}}, "imported"
    )  # it loads


@pytest.mark.parametrize("value", [0, "2", 65, True])
def test_a_max_parallel_requests_edgeproxy_cannot_hold_is_dropped_with_a_warning(
    value: Any,
) -> None:
    dep, warnings = _one({"max_parallel_requests": value})
    assert "max_parallel_requests" not in dep
    assert [w for w in warnings if "max_parallel_requests" in w]


def test_model_info_token_limits_become_the_context_window_and_output_cap() -> None:
    source = {
        "model_list": [
            {
                "model_name": "local",
                "litellm_params": {"model": "openai/smollm2", "api_base": "http://10.0.0.1/v1"},
                "model_info": {"max_input_tokens": 2048, "max_tokens": 512},
            }
        ]
    }
    result = convert(source, {})
    [dep] = result.document["deployments"]
    assert (dep["context_window"], dep["max_output_tokens"]) == (2048, 512)
    assert not [w for w in result.warnings if "max_" in w]


GPT = {
    "model_name": "gpt-4o",
    "litellm_params": {"model": "openai/gpt-4o", "api_key": "os.environ/OPENAI_API_KEY"},
}


def test_team_settings_become_teams_of_one_organization_and_the_rest_is_said_dropped() -> None:
    source = {
        "model_list": [GPT],
        "litellm_settings": {
            "default_team_settings": [
                {
                    "team_id": "Search Team",
                    "team_alias": "Search",
                    "max_budget": 200,
                    "budget_duration": "30d",
                    "soft_budget": 150,
                    "rpm_limit": 60,
                    "tpm_limit": 100000,
                    "max_parallel_requests": 8,
                    "models": ["gpt-4o", "claude"],
                    "metadata": {"cost_center": "42", "size": 3},
                    "success_callback": ["langfuse"],
                },
                {"team_id": "ops", "max_budget": -1, "budget_duration": "90d"},
                {"team_alias": "no id"},
            ],
            "default_team_params": {"max_budget": 10},
            "max_end_user_budget": 0.5,
        },
    }
    result = convert(source, {})
    document, warnings = result.document, result.warnings
    assert document["organizations"] == [{"id": "litellm", "name": "Imported from LiteLLM"}]
    search, ops = document["teams"]
    assert search == {
        "id": "search-team",
        "organization_id": "litellm",
        "name": "Search",
        "budget_usd": 200.0,
        "budget_period": "monthly",
        "soft_budget_ratio": 0.75,
        "rpm_limit": 60,
        "tpm_limit": 100000,
        "max_parallel_requests": 8,
        "models": ["gpt-4o"],
        "tags": {"cost_center": "42"},
    }
    assert ops == {"id": "ops", "organization_id": "litellm", "name": "ops"}

    def said(where: str, what: str) -> bool:
        return any(w.startswith(where) and what in w for w in warnings)

    first, second = "litellm_settings.default_team_settings[0]", "default_team_settings[1]"
    assert said(first, "team_id 'Search Team' written as the id 'search-team'")
    assert said(first, "models ['claude']: not served; left out")
    assert said(first, "success_callback has no equivalent; dropped")
    assert said(first, "metadata values that are not strings dropped")
    assert said("litellm_settings." + second, "max_budget -1 is not a number >= 0; dropped")
    assert said("litellm_settings." + second, "budget_duration '90d'")
    assert said("litellm_settings.default_team_settings[2]", "no team_id; dropped")
    assert said("litellm_settings", "default_team_params has no equivalent; dropped")
    assert said("litellm_settings", "max_end_user_budget has no equivalent; dropped (end users'")


def test_a_soft_budget_equal_to_the_budget_is_dropped_not_made_a_second_100_alert() -> None:
    team = {"team_id": "ops", "max_budget": 100, "soft_budget": 100}
    source = {"model_list": [GPT], "litellm_settings": {"default_team_settings": [team]}}
    result = convert(source, {})
    [ops] = result.document["teams"]
    assert "soft_budget_ratio" not in ops
    assert any(
        "soft_budget 100 is not a share of max_budget below it" in w for w in result.warnings
    )


def test_the_command_writes_teams_that_config_load_takes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = tmp_path / "litellm.yaml"
    teams = [{"team_id": "search", "max_budget": 5, "budget_duration": "1d", "models": ["gpt-4o"]}]
    source.write_text(
        yaml.safe_dump({"model_list": [GPT], "litellm_settings": {"default_team_settings": teams}})
    )
    assert cli.main(["config", "import-litellm", str(source)]) == 0
    out, err = capsys.readouterr()
    assert "1 fallback chains" not in err
    assert ", 1 teams; " in err.splitlines()[-1]
    document = yaml.safe_load(out)
    [team] = document["teams"]
    assert (team["budget_usd"], team["budget_period"]) == (5.0, "daily")
    path = tmp_path / "edgeproxy.yaml"
    path.write_text(out)
    assert load_config_file(path).public_models() == ["gpt-4o"]  # the routing part loads


def test_cache_prices_per_token_become_prices_per_million() -> None:
    entry = {
        "model_name": "claude",
        "litellm_params": {
            "model": "anthropic/claude-sonnet-4",
            "api_key": "os.environ/ANTHROPIC_API_KEY",
            "input_cost_per_token": 3e-06,
            "output_cost_per_token": 1.5e-05,
            "cache_read_input_token_cost": 3e-07,
            "cache_creation_input_token_cost": 3.75e-06,
        },
    }
    [dep] = convert({"model_list": [entry]}, {}).document["deployments"]
    assert dep["cache_read_price_per_mtok"] == 0.3
    assert dep["cache_write_price_per_mtok"] == 3.75
    parse_config({"deployments": [dep]}, "imported", entry=False)  # and it loads with them
