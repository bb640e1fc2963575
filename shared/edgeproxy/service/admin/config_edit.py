"""Admin edits of the configuration document: read, modify, validate, write conditionally.

The configuration is one document in the table (``load_config`` /
``save_config``). Every admin write reads it, applies one change to its
JSON form, validates the result with the same models and rules as a YAML
file (``config.loader.parse_config``), and stores it conditionally on the
version the admin read: a stale version is a ``VersionConflict`` (409),
whether it was stale on arrival or lost a race with another admin's write
between our read and our write. The write carries its audit entry (who,
when, the compact diff), atomically. Other instances see the new document
within their configuration cache TTL (``EDGEPROXY_CONFIG_TTL_SECONDS``).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from edgeproxy.config.loader import from_document, location, parse_config, to_document
from edgeproxy.config.models import GatewayConfig
from edgeproxy.errors import ConfigError, RequestError, VersionConflict
from edgeproxy.service.admin import audit
from edgeproxy.service.admin.owner_guard import owner_checked
from edgeproxy.service.admin.redaction import redact_changes
from edgeproxy.state.store import AdminStore
from edgeproxy.upstream.egress import name_problems

Document = dict[str, Any]
Change = Callable[[Document], None]


@dataclass(frozen=True, slots=True)
class Versioned:
    """A configuration and the version it is stored under (0: none stored yet)."""

    config: GatewayConfig
    version: int

    @property
    def document(self) -> Document:
        """The configuration as JSON (what the admin API shows and edits)."""
        return as_document(self.config)


UNCONDITIONAL_TRIES = 5  # reads-and-writes of one unconditional edit racing other writers
SET_FIELDS = ("modalities", "operations")  # frozensets: their JSON order is the hash order


def as_document(config: GatewayConfig) -> Document:
    """The JSON form of a configuration (aliases, e.g. ``json`` in policies).

    Set-valued fields are sorted, so two processes dump one configuration
    identically and an unchanged set never shows up in a diff.
    """
    doc = config.model_dump(mode="json", by_alias=True)
    for dep in doc["deployments"]:
        for name in SET_FIELDS:
            dep[name] = sorted(dep[name])
    return doc


_DEPLOYMENT_AT = re.compile(r"\bdeployments\[(\d+)\]")
_PLAIN_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")  # Deployment.id's own pattern


def by_id(text: str, ids: Sequence[object]) -> str:
    """``text`` with each ``deployments[i]`` naming that deployment's id instead.

    The configuration's messages give a deployment's position, as a file shows
    it; an admin call names deployments by id and never sees their order
    (``deployments[4].wieght`` is ``deployments[id=mock-a].wieght``). An id the
    model would refuse (the error may be the id's own) keeps the position.
    """

    def named(found: re.Match[str]) -> str:
        i = int(found.group(1))
        ident = ids[i] if i < len(ids) else None
        if isinstance(ident, str) and _PLAIN_ID.match(ident):
            return f"deployments[id={ident}]"
        return found.group(0)

    return _DEPLOYMENT_AT.sub(named, text)


def _ids(document: Document) -> list[object]:
    deployments = document.get("deployments")
    if not isinstance(deployments, list):
        return []
    return [d.get("id") if isinstance(d, dict) else None for d in deployments]


def validated(document: Document) -> GatewayConfig:
    """``document`` checked by the YAML rules; a ``RequestError`` naming the path if invalid."""
    try:
        return parse_config(document, "configuration")
    except ConfigError as exc:
        param = getattr(exc, "param", None)
        raise RequestError(str(exc).replace("\n", "; "), param=param) from None


async def resolvable(config: GatewayConfig) -> None:
    """A 400 naming the field if a deployment's host name resolves to a refused address."""
    problems = await name_problems(config)
    if problems:
        text = "; ".join(f"configuration: {problem}" for problem in problems)
        raise RequestError(text, param=problems[0].field)


def checked(model: type[BaseModel], body: dict[str, Any]) -> BaseModel:
    """``body`` validated by ``model``; a 400 naming each bad field otherwise."""
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False)
        text = "; ".join(f"{location(e['loc'])}: {e['msg']}" for e in errors)
        raise RequestError(text, param=location(errors[0]["loc"])) from None


class ConfigEditor:
    """Versioned, audited edits of the stored configuration.

    ``owner``: the writer is the gateway's owner (the bootstrap admin key, or
    the table itself); only then may an edit change the owner's sections
    (``service/admin/owner_guard``).
    """

    def __init__(
        self, store: AdminStore, clock: Callable[[], float], *, owner: bool = False
    ) -> None:
        self._store = store
        self._clock = clock
        self._owner = owner

    async def current(self) -> Versioned:
        """The stored configuration, read now (not through the cache)."""
        stored = await self._store.load_config()
        if stored is None:
            return Versioned(GatewayConfig(), 0)
        return Versioned(from_document(stored.document), stored.version)

    async def edit(
        self, expected_version: int, change: Change, *, actor: str, action: str, target: str
    ) -> Versioned:
        """Apply ``change`` to the document stored under ``expected_version``.

        ``change`` mutates the JSON document (and raises ``NotFound`` /
        ``RequestError`` for a bad id or value). An edit that changes nothing
        writes nothing and returns the current version.
        """
        now = await self.current()
        if expected_version != now.version:
            raise _conflict(expected_version, now.version)
        before = now.document
        after = copy.deepcopy(before)
        change(after)
        try:
            config = validated(after)
            config = await owner_checked(
                self._store, self._clock, now.config, config, owner=self._owner, actor=actor
            )
            await resolvable(config)
        except RequestError as exc:  # the caller named the deployment by id, not position
            exc.message = by_id(exc.message, _ids(after))
            exc.args = (exc.message,)
            raise
        changes = audit.diff(before, as_document(config))
        if not changes:
            return now
        record = audit.entry(actor, action, target, redact_changes(changes), self._clock())
        version = await self._store.save_config(to_document(config), now.version, record)
        if version is None:
            latest = await self.current()
            raise _conflict(expected_version, latest.version)
        return Versioned(config, version)

    async def trial(self, change: Change) -> GatewayConfig:
        """The configuration ``change`` would make of the stored one, checked as ``edit``
        checks it (models, entry rules, name resolution), and not written."""
        now = await self.current()
        after = copy.deepcopy(now.document)
        change(after)
        try:
            config = validated(after)
            await resolvable(config)
        except RequestError as exc:
            exc.message = by_id(exc.message, _ids(after))
            exc.args = (exc.message,)
            raise
        return config

    async def edit_latest(
        self, change: Change, *, actor: str, action: str, target: str
    ) -> Versioned:
        """Apply ``change`` to whatever is stored now: last writer wins (an unconditional write).

        Still written conditionally on the version just read, so a write that
        lands in between is not overwritten wholesale: ``change`` is applied
        again on top of it (a partial update merges over the newer document).
        """
        for _ in range(UNCONDITIONAL_TRIES - 1):
            now = await self.current()
            try:
                return await self.edit(
                    now.version, change, actor=actor, action=action, target=target
                )
            except VersionConflict:
                continue  # another write landed between our read and ours: apply over it
        now = await self.current()
        return await self.edit(now.version, change, actor=actor, action=action, target=target)

    async def replace(self, config: GatewayConfig, *, actor: str, source: str) -> int:
        """Store a whole configuration (``edgeproxy config load``) over whatever is stored.

        Still a conditional write on the version just read, so a concurrent
        admin edit is never lost silently: the load fails with a conflict.
        """
        now = await self.current()
        config = await owner_checked(
            self._store, self._clock, now.config, config, owner=self._owner, actor=actor
        )
        await resolvable(config)
        changes = redact_changes(audit.diff(now.document, as_document(config)))
        record = audit.entry(actor, "config.load", source, changes, self._clock())
        version = await self._store.save_config(to_document(config), now.version, record)
        if version is None:
            raise VersionConflict("The configuration changed while it was being loaded; retry.")
        return version


def _conflict(sent: int, current: int) -> VersionConflict:
    return VersionConflict(
        f"The configuration changed: version {sent} is stale, the current version is "
        f"{current}. Read it again and retry.",
        param="version",
    )
