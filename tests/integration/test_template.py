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


def test_functions_may_not_scan_or_manage_the_table(template: dict[str, Any]) -> None:
    (policy,) = _of_type(template, "AWS::IAM::ManagedPolicy").values()
    actions = {
        action
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        for action in statement["Action"]
        if isinstance(statement["Action"], list)
    }
    assert {a for a in actions if a.startswith("dynamodb:")} == {
        "dynamodb:GetItem",
        "dynamodb:BatchGetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        "dynamodb:Query",
    }
    for function in _of_type(template, "AWS::Serverless::Function").values():
        assert function["Properties"]["Policies"] == [{"Ref": "StateAccessPolicy"}]


def test_every_function_uses_the_shared_layer(template: dict[str, Any]) -> None:
    (layer_name,) = _of_type(template, "AWS::Serverless::LayerVersion")
    assert template["Globals"]["Function"]["Layers"] == [{"Ref": layer_name}]
    assert template["Resources"][layer_name]["Properties"]["ContentUri"] == "shared/"
