"""moto with IAM enforced, as the deploy rehearsal uses it: actions, resources, transactions.

And the gateway's lean SSM and Secrets Manager clients (``aws/secrets.py``)
under it: a denied read is the same ``CredentialError`` as botocore's.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from edgeproxy.aws.secrets import AwsSecrets, lean_opener
from edgeproxy.aws.session import DeferredSession
from edgeproxy.clients import secrets_options
from edgeproxy.errors import CredentialError
from edgeproxy.settings import Settings
from edgeproxy_dev.dynamo_server import create_table
from edgeproxy_dev.iam_actions import table_arn
from edgeproxy_dev.iam_server import EnforcedAws
from edgeproxy_dev.template import default_template_path

KEY = {"pk": {"S": "a"}, "sk": {"S": "b"}}
PARAMETERS = "arn:aws:ssm:us-east-1:123456789012:parameter/edgeproxy/*"


@pytest.fixture(scope="module")
def aws() -> Iterator[tuple[EnforcedAws, dict[str, Any]]]:
    """Two tables; a role that may read and put items of one, and read /edgeproxy/ parameters."""
    with EnforcedAws() as server:
        for name in ("mine", "other"):
            create_table(server.endpoint_url, name, default_template_path())
        server.client("ssm").put_parameter(Name="/edgeproxy/k", Value="v", Type="SecureString")
        server.client("ssm").put_parameter(Name="/elsewhere/k", Value="v", Type="SecureString")
        arn = table_arn("mine", region="us-east-1", account="123456789012")
        role = server.create_role(
            "TestRole",
            [
                {
                    "Effect": "Allow",
                    "Action": ["dynamodb:GetItem", "dynamodb:PutItem"],
                    "Resource": arn,
                },
                {"Effect": "Allow", "Action": "ssm:GetParameter", "Resource": PARAMETERS},
            ],
        )
        session = server.assume(role)
        server.enforce()
        yield server, session


def _client(server: EnforcedAws, session: dict[str, str], service: str) -> Any:
    return boto3.client(
        service,
        endpoint_url=server.endpoint_url,
        region_name="us-east-1",
        aws_access_key_id=session["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=session["AWS_SECRET_ACCESS_KEY"],
        aws_session_token=session["AWS_SESSION_TOKEN"],
    )


def _code(call: Any) -> str:
    with pytest.raises(ClientError) as refused:
        call()
    return str(refused.value.response["Error"]["Code"])


def test_the_role_may_do_what_its_statements_allow_on_their_resources(
    aws: tuple[EnforcedAws, dict[str, Any]],
) -> None:
    server, session = aws
    # The ARN the statements name is the one moto gives the table (account, region, name).
    described = server.client("dynamodb").describe_table(TableName="mine")["Table"]["TableArn"]
    assert described == table_arn("mine", region="us-east-1", account="123456789012")
    dynamodb, ssm = _client(server, session, "dynamodb"), _client(server, session, "ssm")
    dynamodb.put_item(TableName="mine", Item=KEY)
    assert dynamodb.get_item(TableName="mine", Key=KEY)["Item"] == KEY
    assert ssm.get_parameter(Name="/edgeproxy/k", WithDecryption=True)["Parameter"]["Value"] == "v"
    # Any other action, and the same actions on other resources, are denied as AWS denies them.
    update = {"UpdateExpression": "SET x = :v", "ExpressionAttributeValues": {":v": {"S": "1"}}}
    assert _code(lambda: dynamodb.update_item(TableName="mine", Key=KEY, **update)) == (
        "AccessDeniedException"
    )
    assert _code(lambda: dynamodb.get_item(TableName="other", Key=KEY)) == "AccessDeniedException"
    assert _code(lambda: ssm.get_parameter(Name="/elsewhere/k")) == "AccessDeniedException"
    # Each call is logged with the actions it needed; the denied ones say so.
    calls = server.calls(session["AWS_ACCESS_KEY_ID"])
    assert [(c["actions"], c.get("denied")) for c in calls] == [
        (["dynamodb:PutItem"], None),
        (["dynamodb:GetItem"], None),
        (["ssm:GetParameter"], None),
        (["dynamodb:UpdateItem"], "AccessDenied"),
        (["dynamodb:GetItem"], "AccessDenied"),
        (["ssm:GetParameter"], "AccessDenied"),
    ]


def test_a_transaction_is_authorized_by_each_items_action(
    aws: tuple[EnforcedAws, dict[str, Any]],
) -> None:
    server, session = aws
    dynamodb = _client(server, session, "dynamodb")
    put = {"Put": {"TableName": "mine", "Item": {"pk": {"S": "t"}, "sk": {"S": "1"}}}}
    dynamodb.transact_write_items(TransactItems=[put])  # PutItem: granted
    update = {
        "Update": {
            "TableName": "mine",
            "Key": KEY,
            "UpdateExpression": "SET x = :v",
            "ExpressionAttributeValues": {":v": {"S": "1"}},
        }
    }
    assert _code(lambda: dynamodb.transact_write_items(TransactItems=[put, update])) == (
        "AccessDeniedException"
    )
    last = server.calls(session["AWS_ACCESS_KEY_ID"])[-1]
    assert last["actions"] == ["dynamodb:PutItem", "dynamodb:UpdateItem"]
    assert "dynamodb:UpdateItem" in last["denied"]
    # Nothing of the refused transaction was written.
    assert "x" not in dynamodb.get_item(TableName="mine", Key=KEY).get("Item", {})


def test_unknown_credentials_are_refused(aws: tuple[EnforcedAws, dict[str, Any]]) -> None:
    server, _ = aws
    stranger = {
        "AWS_ACCESS_KEY_ID": "AKIAUNKNOWNUNKNOWN00",
        "AWS_SECRET_ACCESS_KEY": "x",
        "AWS_SESSION_TOKEN": "",
    }
    client = boto3.client(
        "dynamodb",
        endpoint_url=server.endpoint_url,
        region_name="us-east-1",
        aws_access_key_id=stranger["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=stranger["AWS_SECRET_ACCESS_KEY"],
    )
    assert _code(lambda: client.get_item(TableName="mine", Key=KEY)) == (
        "UnrecognizedClientException"
    )
    (call,) = server.calls("AKIAUNKNOWNUNKNOWN00")
    assert call["denied"] == "InvalidClientTokenId"


async def test_the_lean_clients_read_what_the_role_allows_and_say_denied_otherwise(
    aws: tuple[EnforcedAws, dict[str, Any]],
) -> None:
    server, session = aws
    environ = {
        **session,
        "AWS_ENDPOINT_URL": server.endpoint_url,
        "AWS_CONFIG_FILE": "/nonexistent/aws-config",
    }

    def botocore_refused(service: str) -> Any:
        raise AssertionError(f"the lean opener fell back to botocore for {service}")

    async with contextlib.AsyncExitStack() as stack:
        opener = lean_opener(
            DeferredSession(environ),
            "us-east-1",
            environ,
            botocore_refused,
            secrets_options(Settings()),
            random.Random(0).random,
        )
        secrets = AwsSecrets(opener, stack)
        assert await secrets.parameter("/edgeproxy/k") == "v"
        with pytest.raises(CredentialError) as denied:
            await secrets.parameter("/elsewhere/k")
        assert str(denied.value) == "SSM parameter '/elsewhere/k': access denied"
        with pytest.raises(CredentialError) as refused:
            await secrets.secret("edgeproxy/k")  # the role has no secretsmanager statement
        assert str(refused.value) == "Secrets Manager secret 'edgeproxy/k': access denied"
    calls = server.calls(session["AWS_ACCESS_KEY_ID"])[-3:]
    assert [(c["actions"], c.get("denied")) for c in calls] == [
        (["ssm:GetParameter"], None),
        (["ssm:GetParameter"], "AccessDenied"),
        (["secretsmanager:GetSecretValue"], "AccessDenied"),
    ]
