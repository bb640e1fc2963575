"""What a stack's failed first create, and a stack delete, leave behind: offline.

The resources are those ``conditions.deployed`` gives (the transformed
template, its conditions evaluated for one set of parameters). The model
follows CloudFormation's documented rules:

- A create fails at one resource. Resources that do not depend on it (``Ref``,
  ``Fn::GetAtt``, ``Fn::Sub``, ``DependsOn``, transitively) may all have been
  created by then, since CloudFormation creates independent resources in
  parallel: the model takes them all as created (the worst case), the failed
  one too (CloudFormation deletes a resource that failed to create).
- The rollback deletes each of them by its ``DeletionPolicy``: ``Delete`` (the
  default) and ``RetainExceptOnCreate`` delete it; ``Retain`` and ``Snapshot``
  keep it (a snapshot is kept, and billed). A delete the resource refuses
  (``DeletionProtectionEnabled``) fails: the resource stays and the stack ends
  ``ROLLBACK_FAILED``.
- ``sam deploy --on-failure DELETE`` (samconfig.toml's ``on_failure``) then
  deletes the stack, which frees its name when every delete succeeds; with
  ``ROLLBACK`` the stack stays in ``ROLLBACK_COMPLETE``, and a deploy under its
  name fails until someone deletes it.
- A stack delete deletes every resource but those whose policy keeps them
  (``RetainExceptOnCreate`` keeps, as ``Retain``, once the create succeeded).

What only AWS can show: the order and parallelism of a real create, a delete
that fails for reasons outside the template (a non-empty resource, a
throttled API, a missing permission), and how long each delete takes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

KEEP_ON_ROLLBACK = {"Retain", "Snapshot"}
KEEP_ON_DELETE = {"Retain", "Snapshot", "RetainExceptOnCreate"}
_SUB_NAME = re.compile(r"\$\{([A-Za-z0-9]+)(?:\.[A-Za-z0-9.]+)?\}")


@dataclass(frozen=True)
class Outcome:
    """What a stack operation left: its final status, and each resource that outlived it."""

    status: str
    left: dict[str, str]  # logical id -> why it is still there
    name_free: bool  # a deploy under the same stack name can start at once


def _named(value: Any) -> Iterator[str]:
    """Every logical id ``value`` refers to (resources and parameters alike)."""
    if isinstance(value, list):
        for item in value:
            yield from _named(item)
    elif isinstance(value, dict):
        for key, arg in value.items():
            if key == "Ref" and isinstance(arg, str):
                yield arg
            elif key == "Fn::GetAtt":
                yield (arg.split(".")[0] if isinstance(arg, str) else arg[0])
            elif key == "Fn::Sub":
                text = arg if isinstance(arg, str) else arg[0]
                local = {} if isinstance(arg, str) else arg[1]
                yield from (n for n in _SUB_NAME.findall(text) if n not in local)
                yield from _named(local)
            else:
                yield from _named(arg)


def dependencies(resources: Mapping[str, Any]) -> dict[str, set[str]]:
    """Each resource's direct dependencies among ``resources``."""
    out: dict[str, set[str]] = {}
    for name, resource in resources.items():
        depends = resource.get("DependsOn", [])
        named = set(_named(resource.get("Properties", {})))
        named |= {depends} if isinstance(depends, str) else set(depends)
        out[name] = named & set(resources) - {name}
    return out


def dependents(resources: Mapping[str, Any], name: str) -> set[str]:
    """The resources that depend on ``name``, directly or not (created only after it)."""
    needs = dependencies(resources)
    found: set[str] = set()
    frontier = {name}
    while frontier:
        frontier = {r for r, deps in needs.items() if deps & frontier} - found
        found |= frontier
    return found


def refuses_delete(resource: Mapping[str, Any]) -> bool:
    """A resource whose own settings refuse a delete (deletion protection on)."""
    properties = resource.get("Properties", {})
    return properties.get("DeletionProtectionEnabled") in (True, "true")


def failed_create(
    resources: Mapping[str, Any], failed: str, on_failure: str = "ROLLBACK"
) -> Outcome:
    """A first create that fails at ``failed``, rolled back; ``on_failure`` as ``sam deploy``'s."""
    created = set(resources) - dependents(resources, failed)
    left: dict[str, str] = {}
    for name in sorted(created):
        policy = resources[name].get("DeletionPolicy", "Delete")
        if policy in KEEP_ON_ROLLBACK:
            left[name] = f"DeletionPolicy {policy}"
        elif refuses_delete(resources[name]):
            left[name] = "deletion protection refused the rollback's delete"
    refused = any(reason.startswith("deletion protection") for reason in left.values())
    status = "ROLLBACK_FAILED" if refused else "ROLLBACK_COMPLETE"
    # on_failure DELETE deletes the stack after its rollback; a refused delete fails it again.
    return Outcome(status, left, name_free=on_failure == "DELETE" and not refused)


def stack_delete(resources: Mapping[str, Any]) -> Outcome:
    """A delete of a stack whose create succeeded."""
    left: dict[str, str] = {}
    for name, resource in sorted(resources.items()):
        policy = resource.get("DeletionPolicy", "Delete")
        if policy in KEEP_ON_DELETE:
            left[name] = f"DeletionPolicy {policy}"
        elif refuses_delete(resource):
            left[name] = "deletion protection refused the delete"
    refused = any(reason.startswith("deletion protection") for reason in left.values())
    return Outcome("DELETE_FAILED" if refused else "DELETE_COMPLETE", left, name_free=not refused)
