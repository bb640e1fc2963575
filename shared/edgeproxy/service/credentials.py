"""Resolve credential references (``env:NAME``, ``ssm:/path``, ``secretsmanager:name``).

Each reference is resolved at most once per process (a Lambda cold start) and
kept in memory; values are ``SecretStr`` so that a stray log line or repr shows
``**********`` instead of the key. The ``ssm:`` and ``secretsmanager:``
schemes are read by injected fetchers (``state.secrets.AwsSecrets``), which
raise ``CredentialError`` themselves: their foreign errors are translated where
the client is, not here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping

from pydantic import SecretStr

from edgeproxy.errors import CredentialError

# Reads one name of a scheme; raises CredentialError when it cannot.
Fetcher = Callable[[str], Awaitable[str]]


class CredentialResolver:
    """Turns references into secrets, caching them for the life of the process.

    >>> resolver = CredentialResolver({"OPENAI_API_KEY": "sk-..."})
    >>> # await resolver.resolve("env:OPENAI_API_KEY") -> SecretStr('**********')
    """

    def __init__(
        self,
        environ: Mapping[str, str],
        *,
        ssm: Fetcher | None = None,
        secretsmanager: Fetcher | None = None,
    ) -> None:
        self._environ = environ
        self._fetchers: dict[str, Fetcher | None] = {"ssm": ssm, "secretsmanager": secretsmanager}
        self._cache: dict[str, SecretStr] = {}
        self._lock = asyncio.Lock()

    async def resolve(self, reference: str | None) -> SecretStr | None:
        """The secret behind ``reference``; None when the deployment needs no credential."""
        if not reference:
            return None
        cached = self._cache.get(reference)
        if cached is not None:
            return cached
        async with self._lock:
            if reference not in self._cache:
                self._cache[reference] = SecretStr(await self._fetch(reference))
        return self._cache[reference]

    async def _fetch(self, reference: str) -> str:
        scheme, _, name = reference.partition(":")
        if not name:
            raise CredentialError(
                f"credential reference {reference!r} has no scheme (env:, ssm:, secretsmanager:)"
            )
        if scheme == "env":
            value = self._environ.get(name)
            if not value:
                raise CredentialError(f"environment variable {name} is not set")
            return value
        if scheme not in self._fetchers:
            raise CredentialError(f"unknown credential scheme {scheme!r} in {reference!r}")
        fetch = self._fetchers[scheme]
        if fetch is None:
            raise CredentialError(f"{scheme} credentials are not available in this process")
        return await fetch(name)
