"""The teams and keys a ``cache:`` rule names must exist: a rule on a ghost matches nothing.

Teams and client keys are table items, not part of the configuration
document, so ``GatewayConfig`` cannot check them: every write that adds a
rule (``PUT /admin/cache/{level}/{name}``, ``edgeproxy cache set``, a whole
configuration loaded by ``PUT /admin/config`` or ``edgeproxy config load``)
looks the new names up here first, and one that is not in the table is a 400
naming the field (``cache.teams.<id>`` / ``cache.keys.<id>``). A load that
declares a ``teams:`` section is checked against the teams it declares (the
section is the whole level after the load). Only rules the write adds are
looked up: a rule whose team was deleted later stays (it matches nothing)
until it is dropped, so that deletion does not block unrelated edits.

Pools are checked by the configuration itself (``config.models``: a pool no
deployment serves is refused).
"""

from __future__ import annotations

from collections.abc import Iterable

from edgeproxy.config.cache import CacheSettings
from edgeproxy.errors import RequestError
from edgeproxy.routing.hierarchy import Level
from edgeproxy.state.store import TeamStore


def _refused(level: str, name: str) -> RequestError:
    what = "team" if level == "teams" else "client key"
    field = f"cache.{level}.{name}"
    return RequestError(
        f"{field}: there is no {what} `{name}` (a rule on it would match nothing).",
        param=field,
    )


async def check_rule(
    store: TeamStore, level: str, name: str, teams: Iterable[str] | None = None
) -> None:
    """A 400 if ``level``'s ``name`` (a team or key id) is not in the table.

    ``teams``: the team ids to check against instead of the table's (a load that
    declares its teams).
    """
    if level == "teams":
        known = name in set(teams) if teams is not None else None
        if known is False or (known is None and await store.get_group(Level.TEAM, name) is None):
            raise _refused(level, name)
    elif level == "keys" and await store.find_client_key(name) is None:
        raise _refused(level, name)


async def check_added(
    store: TeamStore,
    before: CacheSettings | None,
    after: CacheSettings,
    teams: Iterable[str] | None = None,
) -> None:
    """Every team and key rule of ``after`` that ``before`` does not have, looked up."""
    known = list(teams) if teams is not None else None
    for level, rules, old in (
        ("teams", after.teams, before.teams if before else {}),
        ("keys", after.keys, before.keys if before else {}),
    ):
        for name in sorted(set(rules) - set(old)):
            await check_rule(store, level, name, known)
