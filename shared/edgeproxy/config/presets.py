"""Router presets (``router.preset``): named sets of router defaults.

``patient`` (the default) is the primary spec's: deadlines as patient as the
official SDKs' 600 s read timeout, no stream continuation, a failed probe's
cooldown doubling up to ``max_cooldown_seconds`` and a provider 429 holding
its capacity circuit at least ``throttle_cooldown_seconds``. ``interactive``
is for a person waiting on the answer: tight deadlines, continuation of cut
streams wherever a pool (or a ``general`` fallback target) has a
``supports_prefill`` deployment, a probe of a failing deployment every 5 s at
most, and a provider's Retry-After followed exactly even when shorter.

A preset only supplies defaults: a setting given explicitly wins, field by
field inside ``circuit`` and row by row (operation) inside
``execution_policies``. ``with_preset`` applies it to the raw ``router:``
mapping before validation, so a loaded configuration holds the resolved
values (and dumps them).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from edgeproxy.config.policies import Deadline, Operation, OperationPolicy


class Preset(StrEnum):
    PATIENT = "patient"  # the primary spec's defaults
    INTERACTIVE = "interactive"  # someone is waiting: fail fast, recover fast


def _row(json: Deadline, stream: Deadline) -> dict[str, Any]:
    return OperationPolicy(json=json, stream=stream).model_dump(by_alias=True)


def _deadline(response_s: int, idle_s: int | None, total_s: int, attempts: int) -> Deadline:
    return Deadline(
        response_ms=response_s * 1000,
        idle_ms=None if idle_s is None else idle_s * 1000,
        total_ms=total_s * 1000,
        max_attempts=attempts,
    )


def _text_row() -> dict[str, Any]:
    # A chat turn: a whole JSON answer within 60 s, a stream's first bytes within 15 s
    # and no silence over 30 s; the request done in 2 or 5 minutes.
    return _row(_deadline(60, None, 120, 3), _deadline(15, 30, 300, 3))


def _interactive_policies() -> dict[str, Any]:
    return {
        Operation.CHAT.value: _text_row(),
        Operation.COMPLETIONS.value: _text_row(),
        Operation.RESPONSES.value: _text_row(),
        Operation.EMBEDDINGS.value: _row(_deadline(15, None, 30, 3), _deadline(15, None, 30, 3)),
        Operation.IMAGES.value: _row(_deadline(120, None, 240, 2), _deadline(120, 60, 240, 2)),
        Operation.AUDIO.value: _row(_deadline(120, None, 240, 2), _deadline(60, 30, 240, 2)),
        Operation.VIDEO_SUBMIT.value: _row(_deadline(30, None, 60, 2), _deadline(30, None, 60, 2)),
        Operation.VIDEO_DOWNLOAD.value: _row(_deadline(60, 60, 300, 2), _deadline(60, 60, 300, 2)),
    }


def preset_values(preset: Preset) -> dict[str, Any]:
    """What ``preset`` sets, in the ``router:`` mapping's own shape (empty: the model defaults)."""
    if preset is Preset.PATIENT:
        return {}
    return {
        "circuit": {"max_probe_interval_seconds": 5, "throttle_exact_retry_after": True},
        "continuation": "prefill",
        "execution_policies": _interactive_policies(),
    }


def with_preset(data: Any) -> Any:
    """The raw ``router:`` mapping with its preset's defaults under what it sets itself.

    Anything that is not a mapping naming a known preset is returned as it is
    (validation then names what is wrong with it).
    """
    if not isinstance(data, Mapping):
        return data
    try:
        preset = Preset(data.get("preset", Preset.PATIENT))
    except ValueError:
        return data
    out = dict(data)
    for key, value in preset_values(preset).items():
        given = out.get(key)
        if given is None:
            out[key] = value
        elif isinstance(value, dict) and isinstance(given, Mapping):
            out[key] = {**value, **given}  # field by field (circuit), row by row (policies)
    return out


def without_preset(router: Mapping[str, Any]) -> dict[str, Any]:
    """A resolved ``router:`` mapping less every setting some preset sets, so that another
    preset's defaults apply to them (``circuit`` loses only the fields presets set)."""
    out = dict(router)
    for preset in Preset:
        for key, value in preset_values(preset).items():
            given = out.get(key)
            if key == "circuit" and isinstance(given, Mapping):
                out[key] = {k: v for k, v in given.items() if k not in value}
            else:
                out.pop(key, None)
    return out
