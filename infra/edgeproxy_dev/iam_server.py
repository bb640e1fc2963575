"""moto with IAM enforced (``iam_process``) in a child process, and what a rehearsal sets up in it.

    >>> with EnforcedAws() as aws:                       # authorization off while setting up
    ...     role = aws.create_role("JobRole", statements)
    ...     credentials = aws.assume(role)                # what Lambda gives the function
    ...     aws.enforce()                                 # from here on, IAM decides
    ...     ...                                           # run the function with credentials
    ...     aws.calls()                                   # what each call needed, and denials

Setup calls go unsigned-checked (moto counts them as its initial calls
without authorization); after ``enforce()`` the harness itself signs with
``admin`` (a user allowed everything), the functions with their role's
assumed-role credentials.
"""

from __future__ import annotations

import json
import re
from typing import Any

import boto3
import httpx

from edgeproxy_dev.dynamo_server import EmbeddedDynamo
from edgeproxy_dev.iam_actions import TRANSACTIONS
from edgeproxy_dev.iam_process import LOG_PATH
from edgeproxy_dev.transform import REGION

TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "lambda.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ],
}
# moto checks a transaction as dynamodb:TransactWriteItems, an action IAM does not have;
# iam_process checks its items against the role's own statements instead.
MOTO_TRANSACTIONS = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Action": [f"dynamodb:{t}" for t in sorted(TRANSACTIONS)],
            "Resource": "*",
        }
    ],
}
EVERYTHING = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
}


class EnforcedAws(EmbeddedDynamo):
    """moto's DynamoDB, SSM, Secrets Manager, IAM and STS on 127.0.0.1; IAM enforced on demand."""

    MODULE = "edgeproxy_dev.iam_process"
    READY = re.compile(r"aws on (http://\S+)")

    def __init__(self) -> None:
        super().__init__()
        self.admin: dict[str, str] = {}

    def start(self) -> str:
        url = super().start()
        iam = self.client("iam")
        iam.create_user(UserName="rehearsal-admin")
        iam.put_user_policy(
            UserName="rehearsal-admin",
            PolicyName="everything",
            PolicyDocument=json.dumps(EVERYTHING),
        )
        key = iam.create_access_key(UserName="rehearsal-admin")["AccessKey"]
        self.admin = {
            "aws_access_key_id": key["AccessKeyId"],
            "aws_secret_access_key": key["SecretAccessKey"],
        }
        return url

    def client(self, service: str, **credentials: str) -> Any:
        """A boto3 client for ``service``: the admin's credentials unless others are given."""
        credentials = (
            credentials
            or self.admin
            or {
                "aws_access_key_id": "AKIASETUPSETUPSETUP1",
                "aws_secret_access_key": "setup",
            }
        )
        return boto3.client(
            service, endpoint_url=self.endpoint_url, region_name=REGION, **credentials
        )

    def create_role(self, name: str, statements: list[dict[str, Any]]) -> str:
        """A role whose inline policy is ``statements``; returns its ARN."""
        iam = self.client("iam")
        arn: str = iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(TRUST))[
            "Role"
        ]["Arn"]
        policy = {"Version": "2012-10-17", "Statement": statements}
        iam.put_role_policy(RoleName=name, PolicyName=name, PolicyDocument=json.dumps(policy))
        iam.put_role_policy(
            RoleName=name,
            PolicyName="moto-transactions",
            PolicyDocument=json.dumps(MOTO_TRANSACTIONS),
        )
        return arn

    def assume(self, role_arn: str, session: str = "rehearsal") -> dict[str, str]:
        """The role's credentials as Lambda's environment carries them."""
        found = self.client("sts").assume_role(RoleArn=role_arn, RoleSessionName=session)
        credentials = found["Credentials"]
        return {
            "AWS_ACCESS_KEY_ID": credentials["AccessKeyId"],
            "AWS_SECRET_ACCESS_KEY": credentials["SecretAccessKey"],
            "AWS_SESSION_TOKEN": credentials["SessionToken"],
        }

    def enforce(self) -> None:
        """From the next call on, every call must be signed and allowed."""
        answer = httpx.post(f"{self.endpoint_url}/moto-api/reset-auth", content=b"0")
        answer.raise_for_status()

    def calls(self, access_key_id: str | None = None) -> list[dict[str, Any]]:
        """The signed calls so far (of ``access_key_id`` only, when given)."""
        calls: list[dict[str, Any]] = httpx.get(self.endpoint_url + LOG_PATH).json()["calls"]
        return [c for c in calls if access_key_id is None or c["key"] == access_key_id]
