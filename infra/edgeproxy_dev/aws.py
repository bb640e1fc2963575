"""Credentials and region for talking to a local DynamoDB-protocol server.

Kept apart from the server module so that a gateway pointed at a local
endpoint does not import moto.
"""

from __future__ import annotations

REGION = "us-east-1"
# Local servers accept any credentials; explicit dummies keep a developer's real ones unused.
DUMMY_CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


def client_kwargs(endpoint_url: str) -> dict[str, str]:
    """Keyword arguments for ``session.client("dynamodb", ...)`` against a local server."""
    return {"endpoint_url": endpoint_url, "region_name": REGION, **DUMMY_CREDENTIALS}
