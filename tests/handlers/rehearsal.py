"""A deploy rehearsal: the stack's functions under their own roles, against IAM-enforcing AWS.

``rehearse(upstream)`` starts moto with IAM enforcement (``EnforcedAws``),
creates what a deployed stack and its operator would have made (the state
table, a stored configuration, the SSM SecureString admin key, upstream
credentials in SSM and Secrets Manager), one role per role of the
*transformed* template with exactly its inline statements, and one
assumed-role session per function (what Lambda puts in the function's
environment). Then it enforces IAM: every call a function makes is signed
with its session and allowed or denied by its role, and logged with the IAM
actions it needed.

    with rehearse(upstream_a) as stack:
        env = stack.environment("ProxyFunction")     # the template's, resolved, + credentials
        ...                                           # run the built function with env
        stack.denials("ProxyFunction"), stack.actions("ProxyFunction")
"""

from __future__ import annotations

import copy
import functools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from edgeproxy_dev.deployed import Function, deployed_functions
from edgeproxy_dev.dynamo_server import create_table
from edgeproxy_dev.iam_server import EnforcedAws
from edgeproxy_dev.mock_upstream import MockUpstream
from edgeproxy_dev.template import default_template_path, table_schema
from edgeproxy_dev.transform import REGION
from tests.fixtures.configs import MOCK_KEY
from tests.fixtures.gateway import store
from tests.fixtures.table import TableView
from tests.handlers.expectations import EVENT_ADMIN_KEY, handler_config

TABLE = "edgeproxy-rehearsal"
PARAMETERS = {"AuthMode": "keys"}  # iam mode does not transform yet (issue 20, item 1)
# The upstream key, where an operator keeps it: both schemes a configuration may name.
UPSTREAM_PARAMETER = "/edgeproxy/upstream-key"
UPSTREAM_SECRET = "edgeproxy/upstream-key"


def rehearsal_config(upstream: MockUpstream) -> dict[str, Any]:
    """The handler tests' configuration with its credentials in SSM and Secrets Manager.

    Deployment ``a`` reads its key from Secrets Manager, ``emb`` from SSM;
    the quota refresh reads one source through each (so both quota sources
    refresh, not one as with ``handler_config``).
    """
    config = handler_config(upstream)
    a, emb = config["deployments"]
    a["credential"] = f"secretsmanager:{UPSTREAM_SECRET}"
    emb["credential"] = f"ssm:{UPSTREAM_PARAMETER}"
    (source,) = config["quota_sources"]
    source["credential"] = f"ssm:{UPSTREAM_PARAMETER}"
    second = copy.deepcopy(source)
    second.update(name="mock-secret", credential=f"secretsmanager:{UPSTREAM_SECRET}")
    config["quota_sources"].append(second)
    return config


@functools.cache
def functions() -> dict[str, Function]:
    """The transformed template's functions with the rehearsal's table (translated once)."""
    return deployed_functions(TABLE, PARAMETERS)


@dataclass
class Rehearsal:
    aws: EnforcedAws
    functions: dict[str, Function]
    credentials: dict[str, dict[str, str]]  # by function: its session's environment variables

    def environment(self, function: str) -> dict[str, str]:
        """What Lambda gives ``function``: the template's variables, its role's session, region."""
        return {
            "PATH": os.environ.get("PATH", ""),
            **self.functions[function].environment,
            **self.credentials[function],
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_LAMBDA_FUNCTION_NAME": function,
            # What points the function at the rehearsal instead of AWS: the project's own
            # setting for DynamoDB, botocore's for every other service (SSM, Secrets Manager).
            "EDGEPROXY_DYNAMODB_ENDPOINT": self.aws.endpoint_url,
            "AWS_ENDPOINT_URL": self.aws.endpoint_url,
        }

    def calls(self, function: str) -> list[dict[str, Any]]:
        """Every signed call ``function`` made (with its session's key)."""
        return self.aws.calls(self.credentials[function]["AWS_ACCESS_KEY_ID"])

    def denials(self, function: str) -> list[dict[str, Any]]:
        return [c for c in self.calls(function) if c.get("denied")]

    def actions(self, function: str) -> set[str]:
        """The IAM actions ``function``'s calls needed (a transaction: its items' actions)."""
        return {action for call in self.calls(function) for action in call["actions"]}

    def table(self) -> TableView:
        """The state table, read with the harness's own (admin) credentials."""
        client = self.aws.client("dynamodb")
        return TableView(client, TABLE, table_schema(default_template_path()))


@contextmanager
def rehearse(upstream: MockUpstream) -> Iterator[Rehearsal]:
    """The stack's state and roles in an IAM-enforcing moto; enforced once this yields."""
    with EnforcedAws() as aws:
        create_table(aws.endpoint_url, TABLE, default_template_path())
        store(aws.endpoint_url, TABLE, rehearsal_config(upstream))
        found = functions()
        # The name the template gives the proxy (AdminKeyParameter, as an ssm: reference).
        admin_ref = found["ProxyFunction"].environment["EDGEPROXY_ADMIN_KEY_REF"]
        assert admin_ref.startswith("ssm:"), admin_ref
        ssm = aws.client("ssm")
        ssm.put_parameter(
            Name=admin_ref.removeprefix("ssm:"), Value=EVENT_ADMIN_KEY, Type="SecureString"
        )
        ssm.put_parameter(Name=UPSTREAM_PARAMETER, Value=MOCK_KEY, Type="SecureString")
        aws.client("secretsmanager").create_secret(Name=UPSTREAM_SECRET, SecretString=MOCK_KEY)
        roles: dict[str, str] = {}
        for function in found.values():
            if function.role not in roles:
                roles[function.role] = aws.create_role(function.role, function.statements)
        credentials = {
            name: aws.assume(roles[function.role], session=name) for name, function in found.items()
        }
        aws.enforce()
        yield Rehearsal(aws, found, credentials)
