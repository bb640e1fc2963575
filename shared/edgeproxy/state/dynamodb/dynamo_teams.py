"""The DynamoDB writes of organizations and teams (items: ``state/teams.py``).

Every write is one transaction with its audit entry, so a change is never
stored without it and a refused write leaves nothing behind:

- create: the item (only if absent); for a team, its organization's
  ``members`` +1 (only if the organization exists);
- update: the item over the version read (and, for a team, over the
  ``members_rev`` read, so the keys it was checked against are still its keys);
- delete: the item at the version read and with no members becomes a tombstone
  (``deleted_at``, version +1), so its id is never reused: an admin key scoped to
  the old team must not cover a new one of the same id; for a team, its
  organization's ``members`` -1;
- a team's key given new models: the key over its version, and the team (at the
  version its models were checked against) ``members_rev`` +1;
- a key moved: the key over its version read, the team it joins (at the
  version its models were checked against) ``members`` +1, the one it leaves -1;
- a team moved to another organization: the team over its version read (its
  ``organization_id`` set), the organization it joins (at the version its
  models were checked against) ``members`` +1, the one it leaves -1.

A False answer means a condition failed: the caller re-reads to say which.
"""

from __future__ import annotations

from typing import Any

from edgeproxy.routing.access import ClientKey
from edgeproxy.routing.hierarchy import Group, Level
from edgeproxy.state import keys
from edgeproxy.state.audit import AuditEntry
from edgeproxy.state.dynamodb.dynamo_audit import audit_put
from edgeproxy.state.dynamodb.dynamo_key_lifecycle import versioned_update
from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy.state.dynamodb.table import Table
from edgeproxy.state.items import Item, number, text
from edgeproxy.state.key_items import client_key_item
from edgeproxy.state.teams import REMOVABLE, group_from, group_item, group_key

# A create must not replace an organization or team of the same id.
GROUP_ABSENT = "attribute_not_exists(#pk)"
# A team must not join an organization deleted meanwhile (nor a key a deleted team).
GROUP_EXISTS = "attribute_exists(#pk) AND attribute_not_exists(#gone)"
# A deleted organization or team stays as a tombstone carrying this attribute.
TOMBSTONE = "deleted_at"
# Two admins changing one organization or team from the same read must not both commit.
GROUP_UNCHANGED = "attribute_exists(#pk) AND attribute_not_exists(#gone) AND #version = :expected"
# A team update checked against its keys must not commit after a key joined or left it.
MEMBERS_UNCHANGED = (
    "attribute_exists(#pk) AND attribute_not_exists(#gone) AND #version = :expected AND #rev = :rev"
)
# A delete must not orphan a member added after the admin looked.
GROUP_EMPTY = (
    "attribute_exists(#pk) AND attribute_not_exists(#gone) AND #version = :expected AND "
    "(attribute_not_exists(#members) OR #members = :zero)"
)


def _version_values(version: int) -> dict[str, Any]:
    return {":expected": number(version)}


class DynamoTeams:
    """``TeamStore``: organizations, teams and key moves (mixed into ``DynamoStore``)."""

    _table: Table
    _schema: TableSchema

    async def get_group(self, kind: Level, group_id: str) -> Group | None:
        """The organization or team ``group_id`` (one strongly consistent GetItem), or None."""
        response = await self._table.call(
            "get_item", Key=self._table.key(group_key(kind, group_id)), ConsistentRead=True
        )
        item: Item | None = response.get("Item")
        return group_from(kind, group_id, item) if item and TOMBSTONE not in item else None

    async def list_groups(self, kind: Level) -> list[Group]:
        """Every organization (or team), by id (one paginated Query)."""
        pk = group_key(kind, "x")[0]
        query: dict[str, Any] = {
            "KeyConditionExpression": "#pk = :pk",
            "ExpressionAttributeNames": {"#pk": self._schema.pk},
            "ExpressionAttributeValues": {":pk": text(pk)},
            "ConsistentRead": True,
        }
        found: list[Group] = []
        while True:
            response = await self._table.call("query", **query)
            for item in response.get("Items", []):
                if TOMBSTONE in item:
                    continue
                sk = item[self._schema.sk]["S"]
                found.append(group_from(kind, sk.replace("%23", "#").replace("%25", "%"), item))
            if "LastEvaluatedKey" not in response:
                return sorted(found, key=lambda g: g.id)
            query["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def _count(self, kind: Level, group_id: str, delta: int) -> dict[str, Any]:
        return {
            "Key": self._table.key(group_key(kind, group_id)),
            "UpdateExpression": "ADD #members :delta, #rev :one",
            "ConditionExpression": GROUP_EXISTS,
            "ExpressionAttributeNames": {
                "#pk": self._schema.pk,
                "#members": "members",
                "#rev": "members_rev",
                "#gone": TOMBSTONE,
            },
            "ExpressionAttributeValues": {":delta": number(delta), ":one": number(1)},
        }

    async def create_group(self, group: Group, audit: AuditEntry) -> bool:
        """Store a new organization or team (version 1); False if the id is taken or a team's
        organization is gone."""
        item = {
            **self._table.key(group_key(group.kind, group.id)),
            **group_item(group),
            "version": number(1),
        }
        writes: list[tuple[str, dict[str, Any]]] = [
            (
                "Put",
                {
                    "Item": item,
                    "ConditionExpression": GROUP_ABSENT,
                    "ExpressionAttributeNames": {"#pk": self._schema.pk},
                },
            )
        ]
        if group.parent is not None:
            writes.append(("Update", self._count(Level.ORGANIZATION, group.parent, 1)))
        writes.append(("Put", audit_put(self._table, self._schema, audit)))
        return await self._table.transact_if(writes)

    async def update_group(self, group: Group, expected_version: int, audit: AuditEntry) -> bool:
        """Store ``group``'s settings over ``expected_version`` (and its ``members_rev``)."""
        item = {n: v for n, v in group_item(group).items() if n != "created_at"}
        names = {f"#a{i}": n for i, n in enumerate(item)}
        values: dict[str, Any] = {f":a{i}": v for i, v in enumerate(item.values())}
        update = "SET " + ", ".join(f"#a{i} = :a{i}" for i in range(len(item)))
        update += ", #version = :next"
        removed = [n for n in REMOVABLE if n not in item]
        if removed:
            names.update({f"#r{i}": n for i, n in enumerate(removed)})
            update += " REMOVE " + ", ".join(f"#r{i}" for i in range(len(removed)))
        names.update(
            {
                "#pk": self._schema.pk,
                "#version": "version",
                "#rev": "members_rev",
                "#gone": TOMBSTONE,
            }
        )
        values.update({**_version_values(expected_version), ":next": number(expected_version + 1)})
        if group.members_rev:
            condition = MEMBERS_UNCHANGED
            values[":rev"] = number(group.members_rev)
        else:
            condition = GROUP_UNCHANGED + " AND attribute_not_exists(#rev)"
        body = {
            "Key": self._table.key(group_key(group.kind, group.id)),
            "UpdateExpression": update,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }
        audit_write = audit_put(self._table, self._schema, audit)
        return await self._table.transact_if([("Update", body), ("Put", audit_write)])

    async def delete_group(self, group: Group, audit: AuditEntry) -> bool:
        """Delete ``group`` if it is still at its version and owns nothing: it becomes a
        tombstone, so the id is never given to another organization or team."""
        delete = {
            "Key": self._table.key(group_key(group.kind, group.id)),
            "UpdateExpression": "SET #gone = :now, #version = :next",
            "ConditionExpression": GROUP_EMPTY,
            "ExpressionAttributeNames": {
                "#pk": self._schema.pk,
                "#version": "version",
                "#members": "members",
                "#gone": TOMBSTONE,
            },
            "ExpressionAttributeValues": {
                **_version_values(group.version),
                ":zero": number(0),
                ":now": number(audit.at),
                ":next": number(group.version + 1),
            },
        }
        writes: list[tuple[str, dict[str, Any]]] = [("Update", delete)]
        if group.parent is not None:
            writes.append(("Update", self._count(Level.ORGANIZATION, group.parent, -1)))
        writes.append(("Put", audit_put(self._table, self._schema, audit)))
        return await self._table.transact_if(writes)

    async def move_key(self, key: ClientKey, into: Group | None, audit: AuditEntry) -> bool:
        """Move ``key`` (as read: its version and team) into team ``into`` (None: out of its
        team), counting it out of its team and into ``into`` at ``into.version``."""
        names: dict[str, str] = {"#version": "version", "#team": "team_id"}
        values: dict[str, Any] = {
            ":expected": number(key.version),
            ":next": number(key.version + 1),
        }
        if into is None:
            update = "SET #version = :next REMOVE #team"
        else:
            update = "SET #version = :next, #team = :team"
            values[":team"] = text(into.id)
        if key.version:
            condition = "#version = :expected"
        else:
            condition = "attribute_exists(#pk) AND attribute_not_exists(#version)"
            names["#pk"] = self._schema.pk
            del values[":expected"]
        writes: list[tuple[str, dict[str, Any]]] = [
            (
                "Update",
                {
                    "Key": self._table.key(keys.client_key_key(key.digest)),
                    "UpdateExpression": update,
                    "ConditionExpression": condition,
                    "ExpressionAttributeNames": names,
                    "ExpressionAttributeValues": values,
                },
            )
        ]
        if key.team_id is not None and (into is None or into.id != key.team_id):
            writes.append(("Update", self._count(Level.TEAM, key.team_id, -1)))
        if into is not None and into.id != key.team_id:
            joined = self._count(Level.TEAM, into.id, 1)
            joined["ConditionExpression"] = GROUP_UNCHANGED
            joined["ExpressionAttributeNames"]["#version"] = "version"
            joined["ExpressionAttributeValues"][":expected"] = number(into.version)
            writes.append(("Update", joined))
        writes.append(("Put", audit_put(self._table, self._schema, audit)))
        return await self._table.transact_if(writes)

    async def update_member_key(self, key: ClientKey, expected_version: int, team: Group) -> bool:
        """Store ``key`` (a key of ``team``) over ``expected_version`` while ``team`` is at the
        version it was checked against; bumps the team's ``members_rev``, so a team update
        checked against the key's old models fails instead of committing past it."""
        touch = self._count(Level.TEAM, team.id, 0)
        touch["ConditionExpression"] = GROUP_UNCHANGED
        touch["ExpressionAttributeNames"]["#version"] = "version"
        touch["ExpressionAttributeValues"][":expected"] = number(team.version)
        own = versioned_update(self._table, self._schema, key, expected_version)
        return await self._table.transact_if([("Update", own), ("Update", touch)])

    async def create_member_key(self, key: ClientKey, team: Group, audit: AuditEntry) -> bool:
        """Create ``key`` (``key.team_id`` is ``team``) with its audit entry, counted into
        ``team`` while it is at the version its models were checked against."""
        item = {**self._table.key(keys.client_key_key(key.digest)), **client_key_item(key)}
        put = {
            "Item": item,
            "ConditionExpression": GROUP_ABSENT,
            "ExpressionAttributeNames": {"#pk": self._schema.pk},
        }
        joined = self._count(Level.TEAM, team.id, 1)
        joined["ConditionExpression"] = GROUP_UNCHANGED
        joined["ExpressionAttributeNames"]["#version"] = "version"
        joined["ExpressionAttributeValues"][":expected"] = number(team.version)
        writes = [
            ("Put", put),
            ("Update", joined),
            ("Put", audit_put(self._table, self._schema, audit)),
        ]
        return await self._table.transact_if(writes)

    async def move_team(self, team: Group, into: Group, audit: AuditEntry) -> bool:
        """Move ``team`` (as read: its version and organization) into organization ``into``,
        counting it out of its organization and into ``into`` at ``into.version``."""
        move = {
            "Key": self._table.key(group_key(Level.TEAM, team.id)),
            "UpdateExpression": "SET #org = :org, #version = :next",
            "ConditionExpression": GROUP_UNCHANGED,
            "ExpressionAttributeNames": {
                "#pk": self._schema.pk,
                "#org": "organization_id",
                "#version": "version",
                "#gone": TOMBSTONE,
            },
            "ExpressionAttributeValues": {
                **_version_values(team.version),
                ":org": text(into.id),
                ":next": number(team.version + 1),
            },
        }
        joined = self._count(Level.ORGANIZATION, into.id, 1)
        joined["ConditionExpression"] = GROUP_UNCHANGED
        joined["ExpressionAttributeNames"]["#version"] = "version"
        joined["ExpressionAttributeValues"][":expected"] = number(into.version)
        writes: list[tuple[str, dict[str, Any]]] = [("Update", move), ("Update", joined)]
        if team.parent is not None:
            writes.append(("Update", self._count(Level.ORGANIZATION, team.parent, -1)))
        writes.append(("Put", audit_put(self._table, self._schema, audit)))
        return await self._table.transact_if(writes)
