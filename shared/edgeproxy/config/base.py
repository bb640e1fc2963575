"""The base of every configuration model, and the number types they share.

Every model forbids unknown keys, so a typo in the YAML fails at load time with
the key's name instead of silently falling back to a default. Field names are
the snake_case forms of the knobs in the routing spec (``allowedFails`` is
``allowed_fails``); defaults are the spec's.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

Positive = Annotated[int, Field(gt=0)]
NonNegative = Annotated[int, Field(ge=0)]


class Strict(BaseModel):
    """Base for configuration models: frozen, unknown keys rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True)
