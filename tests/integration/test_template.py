"""template.yaml passes cfn-lint and keeps the promises the code relies on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from edgeproxy_dev.template import default_template_path, load_template

TEMPLATE = default_template_path()
CFN_LINT = Path(sys.executable).with_name("cfn-lint")


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template(TEMPLATE)


def _of_type(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {n: r for n, r in template["Resources"].items() if r["Type"] == kind}


def test_cfn_lint_reports_nothing() -> None:
    # cfn-lint is a dev dependency: its absence is a broken install, not a reason to skip.
    assert CFN_LINT.exists(), f"cfn-lint not found beside {sys.executable}"
    result = subprocess.run(  # noqa: S603 - fixed arguments
        [str(CFN_LINT), "--format", "parseable", str(TEMPLATE)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_http_api_requires_iam_authorization(template: dict[str, Any]) -> None:
    (api,) = _of_type(template, "AWS::Serverless::HttpApi").values()
    assert api["Properties"]["Auth"] == {
        "EnableIamAuthorizer": True,
        "DefaultAuthorizer": "AWS_IAM",
    }


def _statements(template: dict[str, Any], policy: str) -> list[dict[str, Any]]:
    statements: list[dict[str, Any]] = template["Resources"][policy]["Properties"][
        "PolicyDocument"
    ]["Statement"]
    return statements


def _actions(statements: list[dict[str, Any]]) -> set[str]:
    found: set[str] = set()
    for statement in statements:
        action = statement["Action"]
        found.update(action if isinstance(action, list) else [action])
    return found


def test_functions_may_not_scan_or_manage_the_table(template: dict[str, Any]) -> None:
    assert _actions(_statements(template, "StateAccessPolicy")) == {
        "dynamodb:GetItem",
        "dynamodb:BatchGetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        "dynamodb:Query",
    }
    policies = {
        name: f["Properties"]["Policies"]
        for name, f in _of_type(template, "AWS::Serverless::Function").items()
    }
    assert policies == {
        "ProxyFunction": [{"Ref": "StateAccessPolicy"}, {"Ref": "ProxySecretsPolicy"}],
        "HealthJobFunction": [{"Ref": "StateAccessPolicy"}],
    }


def test_only_the_proxy_reads_secrets_and_the_admin_key_is_a_reference(
    template: dict[str, Any],
) -> None:
    secrets = _statements(template, "ProxySecretsPolicy")
    assert _actions(secrets) == {"ssm:GetParameter", "secretsmanager:GetSecretValue"}
    admin = next(s for s in secrets if s["Sid"] == "AdminKeyParameter")
    assert "${AdminKeyParameter}" in admin["Resource"]["Fn::Sub"]
    # The health job's only policy holds table actions and nothing else.
    assert all(
        a.startswith("dynamodb:") for a in _actions(_statements(template, "StateAccessPolicy"))
    )
    proxy = template["Resources"]["ProxyFunction"]["Properties"]["Environment"]["Variables"]
    assert proxy["EDGEPROXY_ADMIN_KEY_REF"] == {"Fn::Sub": "ssm:${AdminKeyParameter}"}
    parameter = template["Parameters"]["AdminKeyParameter"]
    assert parameter["Type"] == "String"
    assert parameter["AllowedPattern"].startswith("^/edgeproxy/")


def test_every_function_uses_the_shared_layer(template: dict[str, Any]) -> None:
    (layer_name,) = _of_type(template, "AWS::Serverless::LayerVersion")
    assert template["Globals"]["Function"]["Layers"] == [{"Ref": layer_name}]
    assert template["Resources"][layer_name]["Properties"]["ContentUri"] == "shared/"
