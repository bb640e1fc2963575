"""Which IAM actions and resources a call needs, as IAM authorizes them."""

from __future__ import annotations

from edgeproxy_dev.iam_actions import needed, table_arn

WHERE = {"region": "us-east-1", "account": "123456789012"}
TABLE = "arn:aws:dynamodb:us-east-1:123456789012:table/state"


def test_an_item_call_needs_its_own_action_on_the_table() -> None:
    assert table_arn("state", **WHERE) == TABLE
    assert needed("dynamodb", "UpdateItem", {"TableName": "state"}, **WHERE) == [
        ("dynamodb:UpdateItem", TABLE)
    ]
    batch = {"RequestItems": {"state": {"Keys": []}}}
    assert needed("dynamodb", "BatchGetItem", batch, **WHERE) == [("dynamodb:BatchGetItem", TABLE)]


def test_a_transaction_needs_each_items_action_not_one_of_its_own() -> None:
    body = {
        "TransactItems": [
            {"Update": {"TableName": "state"}},
            {"Put": {"TableName": "state"}},
            {"ConditionCheck": {"TableName": "state"}},
            {"Delete": {"TableName": "state"}},
        ]
    }
    assert needed("dynamodb", "TransactWriteItems", body, **WHERE) == [
        ("dynamodb:UpdateItem", TABLE),
        ("dynamodb:PutItem", TABLE),
        ("dynamodb:ConditionCheckItem", TABLE),
        ("dynamodb:DeleteItem", TABLE),
    ]


def test_parameters_and_secrets_are_named_by_their_arns() -> None:
    assert needed("ssm", "GetParameter", {"Name": "/edgeproxy/admin-key"}, **WHERE) == [
        ("ssm:GetParameter", "arn:aws:ssm:us-east-1:123456789012:parameter/edgeproxy/admin-key")
    ]
    ((action, arn),) = needed(
        "secretsmanager", "GetSecretValue", {"SecretId": "edgeproxy/k"}, **WHERE
    )
    assert action == "secretsmanager:GetSecretValue"
    # A secret's ARN ends in six random characters: the template's edgeproxy/* matches it.
    assert arn.startswith("arn:aws:secretsmanager:us-east-1:123456789012:secret:edgeproxy/k-")
