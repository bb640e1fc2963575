"""Every exception class of the package is defined, and drawn, in ``edgeproxy.errors``."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import edgeproxy
from edgeproxy import errors


def test_every_exception_class_lives_in_errors_and_is_drawn() -> None:
    elsewhere = []
    for module in pkgutil.walk_packages(edgeproxy.__path__, "edgeproxy."):
        for name, value in vars(importlib.import_module(module.name)).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__.startswith("edgeproxy.")
                and value.__module__ != errors.__name__
            ):
                elsewhere.append(f"{module.name}.{name}")
    assert elsewhere == []
    defined = [
        name
        for name, value in vars(errors).items()
        if inspect.isclass(value) and issubclass(value, BaseException)
        if value.__module__ == errors.__name__
    ]
    drawn = errors.__doc__ or ""
    assert [name for name in defined if f" {name} " not in drawn] == []
