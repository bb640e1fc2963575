"""What the LiteLLM importer reports: warnings (a setting not carried over) and errors
(an entry not converted), each naming the entry as the user wrote it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class Warnings(list[str]):
    """The settings the conversion could not map, each a line for stderr; ``errors``: the
    entries it could not convert at all."""

    def __init__(self) -> None:
        super().__init__()
        self.errors: list[str] = []

    def add(self, where: str, message: str) -> None:
        self.append(f"{where}: {message}")

    def skip(self, where: str, message: str) -> None:
        """``where`` is not converted (the rest of the file is)."""
        self.errors.append(f"{where}: {message}; not converted")


def describe(entry: Any, index: int) -> str:
    """An entry as the user wrote it: ``model_list[3] (model_name: gpt-4, model: azure/x)``."""
    where = f"model_list[{index}]"
    if not isinstance(entry, Mapping):
        return where
    params = entry.get("litellm_params")
    model = params.get("model") if isinstance(params, Mapping) else None
    parts = [
        f"{key}: {value}"
        for key, value in (("model_name", entry.get("model_name")), ("model", model))
        if isinstance(value, str) and value
    ]
    return f"{where} ({', '.join(parts)})" if parts else where
