"""``DeferredSession``: the default AWS session, built only when something needs more than keys.

A Lambda cold start pays for every import before its first answer, and the
request path's one AWS client (``DynamoClient``) needs only credentials to
sign with. On Lambda those are the environment's, the first link of
botocore's default chain; reading them costs nothing, while importing
aioboto3 (boto3, aiobotocore, botocore's session and loaders) costs about a
third of the cold start. So this session answers ``get_credentials`` from
the environment when botocore's chain would stop there too (both keys set, no
expiry to refresh, no profile named), and builds the real ``aioboto3.Session``
on anything else: another credential source, or a client (SSM, Secrets
Manager, Bedrock) asked for on first use.

    >>> session = DeferredSession({"AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "s"})
    >>> import asyncio; asyncio.run(session.get_credentials()).access_key
    'AKID'
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, NamedTuple

# Any of these and botocore's chain would not stop at the environment's keys
# (a named profile skips them; an expiry makes them refreshable).
NOT_STATIC = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_CREDENTIAL_EXPIRATION")


class StaticCredentials(NamedTuple):
    """Keys that do not change: botocore's frozen-credentials shape, frozen already."""

    access_key: str
    secret_key: str
    token: str | None

    def get_frozen_credentials(self) -> StaticCredentials:
        return self


def environment_credentials(environ: Mapping[str, str]) -> StaticCredentials | None:
    """The environment's keys when botocore's default chain would use exactly them, else None."""
    access = environ.get("AWS_ACCESS_KEY_ID", "")
    secret = environ.get("AWS_SECRET_ACCESS_KEY", "")
    if not access or not secret or any(environ.get(name) for name in NOT_STATIC):
        return None
    token = environ.get("AWS_SESSION_TOKEN") or environ.get("AWS_SECURITY_TOKEN") or None
    return StaticCredentials(access, secret, token)


class DeferredSession:
    """An ``aioboto3.Session()`` made on first use of anything but environment credentials."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._environ = os.environ if environ is None else environ
        self._session: Any | None = None

    async def get_credentials(self) -> Any:
        found = environment_credentials(self._environ)
        if found is not None:
            return found
        return await self.session().get_credentials()

    def session(self) -> Any:
        """The real session (aioboto3 imported now, once)."""
        if self._session is None:
            import aioboto3  # the cold start's largest import, deferred

            self._session = aioboto3.Session()
        return self._session

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.session(), name)
