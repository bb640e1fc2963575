"""Model aliases (``aliases:``): another public name for a model, sharing everything of it.

An alias is resolved to its canonical model before anything else looks at the
request, so the alias and the model share one set of pools, priority tiers,
strategies, sticky bindings, rpm/tpm counters and key permissions::

    aliases:
      gpt-4-legacy:
        model: fast-chat                      # the canonical public model
        deprecation:                          # optional: a notice on every answer to the alias
          since: 2026-11-01T00:00:00Z         # Deprecation: @1793491200 (RFC 9745)
          sunset: 2027-03-01T00:00:00Z        # Sunset: Mon, 01 Mar 2027 00:00:00 GMT (RFC 8594)
          link: https://example.com/models    # Link: <...>; rel="deprecation"

``alias:group`` resolves to ``model:group``. An alias may not shadow a public
model, name an unknown model or chain to another alias.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC
from email.utils import format_datetime
from typing import Annotated, Self

from pydantic import AwareDatetime, Field, model_validator

from edgeproxy.config.base import Strict

AliasName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._/@-]*$", max_length=200)]


class Deprecation(Strict):
    """The deprecation notice of an alias, as RFC 9745 / RFC 8594 response headers."""

    since: AwareDatetime  # the alias is (or will be) deprecated from then on
    sunset: AwareDatetime | None = None  # when it is expected to stop answering
    link: Annotated[str, Field(pattern=r"^https?://[^\s<>\"]+$", max_length=2000)] | None = None

    @model_validator(mode="after")
    def _sunset_after_since(self) -> Self:
        if self.sunset is not None and self.sunset < self.since:
            raise ValueError("sunset may not be earlier than since (RFC 9745)")
        return self

    def headers(self) -> dict[str, str]:
        """The response headers announcing it."""
        out = {"deprecation": f"@{int(self.since.timestamp())}"}
        if self.sunset is not None:
            out["sunset"] = format_datetime(self.sunset.astimezone(UTC), usegmt=True)
        if self.link is not None:
            out["link"] = f'<{self.link}>; rel="deprecation"'
        return out


class Alias(Strict):
    """One alias: its canonical model and an optional deprecation notice."""

    model: str
    deprecation: Deprecation | None = None


def alias_problems(aliases: Mapping[str, Alias], models: set[str]) -> list[str]:
    """Why ``aliases`` cannot stand beside the public ``models`` (deployments' ``model``)."""
    problems = []
    for name, alias in sorted(aliases.items()):
        if name in models:
            problems.append(f"aliases.{name}: shadows the public model {name!r}")
        elif alias.model in aliases:
            problems.append(
                f"aliases.{name}: names the alias {alias.model!r}; "
                "an alias must name a model, not another alias"
            )
        elif alias.model not in models:
            problems.append(f"aliases.{name}: names unknown model {alias.model!r}")
    return problems


def canonical(aliases: Mapping[str, Alias], name: str) -> str:
    """The public model ``name`` stands for (``alias:group`` -> ``model:group``)."""
    base, sep, group = name.partition(":")
    alias = aliases.get(base)
    return name if alias is None else alias.model + sep + group


def names_of(aliases: Mapping[str, Alias], pool_key: str) -> list[str]:
    """``pool_key`` and every alias of it (with the same route group), the pool first."""
    base, sep, group = pool_key.partition(":")
    return [
        pool_key,
        *(name + sep + group for name, a in sorted(aliases.items()) if a.model == base),
    ]
