"""Resolve credential references (``env:NAME``, ``ssm:/path``, ``secretsmanager:name``).

Each reference is resolved at most once per process (a Lambda cold start) and
kept in memory; values are ``SecretStr`` so that a stray log line or repr shows
``**********`` instead of the key. The ``ssm:`` and ``secretsmanager:``
schemes are read by injected fetchers (``aws.secrets.AwsSecrets``), which
raise ``CredentialError`` themselves: their foreign errors are translated where
the client is, not here.

``resolve`` serves upstream credentials and applies the reference rule
(``config.credential_refs``); on top of it the bootstrap admin key's
reference is refused, and so is any value that equals the bootstrap key or
one of the process's ``AWS_*`` variables, however it was reached. The
bootstrap key itself is read with ``resolve_bootstrap``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping

from pydantic import SecretStr

from edgeproxy.config.credential_refs import reference_problem
from edgeproxy.errors import CredentialError
from edgeproxy.service.credential_guard import protected_values, same_secret

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
        bootstrap_ref: str | None = None,
    ) -> None:
        self._environ = environ
        self._bootstrap_ref = bootstrap_ref
        self._fetchers: dict[str, Fetcher | None] = {"ssm": ssm, "secretsmanager": secretsmanager}
        self._cache: dict[str, SecretStr] = {}
        self._vetted: set[str] = set()  # upstream references that passed every check
        self._lock = asyncio.Lock()

    async def resolve(self, reference: str | None) -> SecretStr | None:
        """The upstream credential behind ``reference``; None when none is needed.

        ``CredentialError`` for a reference outside the rule, the bootstrap
        key's reference, or a value that is one of the gateway's own secrets.
        """
        if not reference:
            return None
        if reference in self._vetted:
            return self._cache[reference]
        problem = reference_problem(reference)
        if problem is not None:
            raise CredentialError(f"refused credential reference: {problem}")
        if reference.strip() == (self._bootstrap_ref or "").strip():
            raise CredentialError("the bootstrap admin key cannot be an upstream credential")
        secret = await self.resolve_bootstrap(reference)
        assert secret is not None
        if same_secret(secret.get_secret_value(), await self._protected()):
            raise CredentialError(f"{reference!r} holds one of the gateway's own secrets; refused")
        self._vetted.add(reference)
        return secret

    async def problem(self, reference: str) -> str | None:
        """Why ``reference`` cannot be resolved here (None: it can); never its value."""
        try:
            await self.resolve(reference)
        except CredentialError as exc:
            return str(exc)
        return None

    async def _protected(self) -> list[str]:
        bootstrap = None
        if self._bootstrap_ref:
            try:
                found = await self.resolve_bootstrap(self._bootstrap_ref)
                bootstrap = found.get_secret_value() if found else None
            except CredentialError:
                bootstrap = None  # not readable here: it cannot be read for an upstream either
        return protected_values(self._environ, bootstrap)

    async def resolve_bootstrap(self, reference: str | None) -> SecretStr | None:
        """The secret behind any reference (the bootstrap admin key's; no rule applies)."""
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
