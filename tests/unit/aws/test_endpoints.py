"""Where the JSON clients send their calls: botocore's order, and botocore's client beyond it."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgeproxy.aws.dynamodb import DYNAMODB
from edgeproxy.aws.endpoints import endpoint_url
from edgeproxy.aws.secrets import SECRETS_MANAGER, SSM

NO_CONFIG = {"AWS_CONFIG_FILE": "/nonexistent/aws-config"}
LOCAL = "http://127.0.0.1:5000"


@pytest.mark.parametrize(
    ("region", "ssm", "secrets"),
    [
        ("eu-west-1", "https://ssm.eu-west-1.amazonaws.com", "https://secretsmanager.eu-west-1.amazonaws.com"),
        ("cn-north-1", "https://ssm.cn-north-1.amazonaws.com.cn", "https://secretsmanager.cn-north-1.amazonaws.com.cn"),
        ("us-gov-west-1", "https://ssm.us-gov-west-1.amazonaws.com", "https://secretsmanager.us-gov-west-1.amazonaws.com"),
    ],
)  # fmt: skip
def test_without_settings_the_regions_public_endpoint(region: str, ssm: str, secrets: str) -> None:
    assert endpoint_url(SSM, region, NO_CONFIG) == ssm
    assert endpoint_url(SECRETS_MANAGER, region, NO_CONFIG) == secrets


def test_the_services_own_variable_then_the_global_one() -> None:
    environ = {**NO_CONFIG, "AWS_ENDPOINT_URL": LOCAL, "AWS_ENDPOINT_URL_SSM": "http://ssm.local"}
    assert endpoint_url(SSM, "us-east-1", environ) == "http://ssm.local"
    assert endpoint_url(SECRETS_MANAGER, "us-east-1", environ) == LOCAL
    environ["AWS_ENDPOINT_URL_SECRETS_MANAGER"] = "http://sm.local"
    assert endpoint_url(SECRETS_MANAGER, "us-east-1", environ) == "http://sm.local"
    assert endpoint_url(
        DYNAMODB, "us-east-1", {**NO_CONFIG, "AWS_ENDPOINT_URL_DYNAMODB": LOCAL}
    ) == (LOCAL)


@pytest.mark.parametrize(
    "setting",
    ["AWS_USE_FIPS_ENDPOINT", "AWS_USE_DUALSTACK_ENDPOINT", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"],
)
def test_endpoint_rules_it_does_not_model_are_left_to_botocore(setting: str) -> None:
    assert endpoint_url(SSM, "us-east-1", {**NO_CONFIG, setting: "true"}) is None
    assert endpoint_url(SSM, "us-iso-east-1", NO_CONFIG) is None  # its own DNS suffix


def test_a_config_file_that_sets_endpoints_is_left_to_botocore(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text("[default]\nregion = eu-west-1\n")
    environ = {"AWS_CONFIG_FILE": str(config), "AWS_ENDPOINT_URL": LOCAL}
    assert endpoint_url(SSM, "us-east-1", environ) == LOCAL
    config.write_text("[default]\nservices = local\n[services local]\nssm =\n  endpoint_url = x\n")
    assert endpoint_url(SSM, "us-east-1", environ) is None
    # The service's own variable still comes first, as in botocore.
    assert endpoint_url(SSM, "us-east-1", {**environ, "AWS_ENDPOINT_URL_SSM": LOCAL}) == LOCAL
