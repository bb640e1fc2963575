"""The IAM actions and resources one AWS API call needs, as IAM (not moto) authorizes them.

Only the JSON-protocol services the functions call are known: DynamoDB, SSM
and Secrets Manager. Most calls are one action on one resource; a DynamoDB
transaction is authorized per item by the item's own action (a ``Put`` needs
``dynamodb:PutItem``, a ``ConditionCheck`` ``dynamodb:ConditionCheckItem``:
the DynamoDB developer guide, "Using IAM with DynamoDB transactions"), which
moto does not do: it checks ``dynamodb:TransactWriteItems`` once.

    >>> needed("dynamodb", "GetItem", {"TableName": "t"}, region="us-east-1", account="1")
    [('dynamodb:GetItem', 'arn:aws:dynamodb:us-east-1:1:table/t')]
"""

from __future__ import annotations

from typing import Any

# A transaction item's kind -> the action IAM checks for it.
TRANSACTION_ITEMS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
    "Get": "GetItem",
}
TRANSACTIONS = frozenset({"TransactWriteItems", "TransactGetItems"})


def table_arn(name: str, *, region: str, account: str) -> str:
    """The ARN DynamoDB (and moto) gives the table ``name``."""
    return f"arn:aws:dynamodb:{region}:{account}:table/{name}"


def needed(
    service: str, operation: str, body: dict[str, Any], *, region: str, account: str
) -> list[tuple[str, str]]:
    """``(action, resource ARN)`` pairs IAM checks for ``operation`` with ``body``."""
    if service == "dynamodb":
        return _dynamodb(operation, body, region, account)
    if service == "ssm":
        name = str(body.get("Name", ""))
        path = name if name.startswith("/") else "/" + name
        return [(f"ssm:{operation}", f"arn:aws:ssm:{region}:{account}:parameter{path}")]
    if service == "secretsmanager":
        secret = str(body.get("SecretId", ""))
        if not secret.startswith("arn:"):
            # Secrets Manager's ARNs end in "-" and six random characters.
            secret = f"arn:aws:secretsmanager:{region}:{account}:secret:{secret}-AbCdEf"
        return [(f"secretsmanager:{operation}", secret)]
    return [(f"{service}:{operation}", "*")]


def _dynamodb(
    operation: str, body: dict[str, Any], region: str, account: str
) -> list[tuple[str, str]]:
    if operation in TRANSACTIONS:
        out = []
        for item in body.get("TransactItems", []):
            for kind, request in item.items():
                arn = table_arn(str(request.get("TableName", "")), region=region, account=account)
                out.append((f"dynamodb:{TRANSACTION_ITEMS.get(kind, kind)}", arn))
        return out
    if operation in ("BatchGetItem", "BatchWriteItem"):
        tables = list(body.get("RequestItems", {}))
    else:
        tables = [str(body.get("TableName", ""))]
    return [(f"dynamodb:{operation}", table_arn(t, region=region, account=account)) for t in tables]
