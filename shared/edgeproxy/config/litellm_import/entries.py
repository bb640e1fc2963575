"""LiteLLM ``model_list`` entries as edgeproxy deployments (``edgeproxy config import-litellm``).

Pure: a parsed LiteLLM document in, a configuration document (plain dicts,
as in the YAML) and a list of warnings out; ``environ`` resolves the
``os.environ/NAME`` values that are not secrets (``api_base``,
``api_version``, ``aws_region_name``). Key references become credential
references (``os.environ/NAME`` -> ``env:NAME``); a literal key is never
copied; an entry without ``api_key`` gets the variable LiteLLM would read
(``config/litellm_import/keys.py``). Entries name themselves as the user wrote them
(``model_list[3] (model_name: gpt-4, model: azure/chatgpt-v-2)``); one that
cannot be converted is an error (``Warnings.skip``), the others go on.
``config/litellm_import/router.py`` maps the router settings and fallbacks.
The provider kinds and URLs: ``config/litellm_import/targets.py``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from edgeproxy.config.deployment import MAX_PARALLEL_SLOTS
from edgeproxy.config.litellm_import.keys import default_credential
from edgeproxy.config.litellm_import.report import Warnings, describe
from edgeproxy.config.litellm_import.targets import ENV, split_model, target

__all__ = ["Warnings", "deployment", "describe"]

_MODES = {
    "chat": ["chat"],
    "completion": ["completions"],
    "embedding": ["embeddings"],
    "responses": ["responses"],
}
# Entry keys beside litellm_params that this module reads.
ENTRY = frozenset({"model_name", "litellm_params", "model_info", "rpm", "tpm"})
_ID_CHARS = re.compile(r"[^A-Za-z0-9._:-]+")
# litellm_params this module maps; any other is reported.
PARAMS = frozenset(
    {
        "model",
        "api_key",
        "api_base",
        "api_version",
        "aws_region_name",
        "rpm",
        "tpm",
        "max_parallel_requests",
        "weight",
        "order",
        "timeout",
        "stream_timeout",
        "max_retries",
        "input_cost_per_token",
        "output_cost_per_token",
        "cache_read_input_token_cost",
        "cache_creation_input_token_cost",
    }
)
INFO = frozenset(
    {
        "id",
        "mode",
        "supports_vision",
        "input_cost_per_token",
        "output_cost_per_token",
        "cache_read_input_token_cost",
        "cache_creation_input_token_cost",
        "max_input_tokens",
        "max_tokens",
        "max_output_tokens",
    }
)
# model_info's token limits: LiteLLM's input limit is the window a prompt must fit in,
# its max_tokens / max_output_tokens the most the model writes.
_WINDOW = (
    ("max_input_tokens", "context_window"),
    ("max_output_tokens", "max_output_tokens"),
    ("max_tokens", "max_output_tokens"),
)
_AWS_AUTH = frozenset(
    {
        "aws_access_key_id",
        "aws_secret_access_key",
        "aws_session_token",
        "aws_role_name",
        "aws_profile_name",
    }
)


def deployment(
    entry: Any, index: int, environ: Mapping[str, str], warnings: Warnings
) -> dict[str, Any] | None:
    """One ``model_list`` entry as a deployment (``order`` kept aside), or None if it cannot be.

    The deployment's ``id`` is ``model_info.id`` or ``<model_name>-<index>``
    (made unique by ``deployments``); ``_entry`` names the entry it came from.
    """
    where = describe(entry, index)
    if not isinstance(entry, Mapping):
        warnings.skip(where, "not a mapping")
        return None
    name, params = entry.get("model_name"), entry.get("litellm_params")
    info = entry.get("model_info") or {}
    if not isinstance(info, Mapping):
        warnings.add(where, "model_info is not a mapping; ignored")
        info = {}
    if not isinstance(name, str) or not name or not isinstance(params, Mapping):
        warnings.skip(where, "needs model_name and litellm_params")
        return None
    model = params.get("model")
    if not isinstance(model, str) or not model:
        warnings.skip(where, "litellm_params.model is missing")
        return None
    if "*" in name or "*" in model:
        warnings.skip(where, "a wildcard (any model of a provider) has no equivalent")
        return None
    prefix, rest = split_model(model)
    served = target(prefix, rest, params, environ, where, warnings)
    if served is None:
        return None
    out: dict[str, Any] = {"id": _id(info.get("id"), name, index), "model": name, **served}
    _credential(out, prefix, params, environ, where, warnings)
    _limits(out, params, entry, where, warnings)
    if not _info(out, info, where, warnings):
        return None
    for extra in sorted(set(params) - PARAMS):
        hint = " (Bedrock is called with the function's IAM role)" if extra in _AWS_AUTH else ""
        warnings.add(where, f"litellm_params.{extra} has no equivalent; dropped{hint}")
    for extra in sorted(set(entry) - ENTRY):
        warnings.add(where, f"{extra} has no equivalent; dropped")
    out["_entry"] = where
    return out


def _credential(
    out: dict[str, Any],
    prefix: str,
    params: Mapping[str, Any],
    environ: Mapping[str, str],
    where: str,
    w: Warnings,
) -> None:
    key = params.get("api_key")
    if out["provider"] == "bedrock":
        if key:
            w.add(where, "api_key dropped (Bedrock is called with the function's IAM role)")
        return
    if isinstance(key, str) and key.startswith(ENV):
        out["credential"] = "env:" + key[len(ENV) :]
    elif key is None or key == "":
        reference, warning = default_credential(prefix, bool(params.get("api_base")), environ)
        if reference is not None:
            out["credential"] = reference
        if warning is not None:
            w.add(where, warning)
    else:
        w.add(
            where,
            "a literal api_key is not copied (credentials are references), so this deployment "
            "cannot authenticate until you store the key in SSM or Secrets Manager and set "
            "credential: ssm:/edgeproxy/... on it",
        )


def _id(given: Any, name: str, index: int) -> str:
    raw = given if isinstance(given, str) and given else f"{name}-{index}"
    return _ID_CHARS.sub("-", raw).strip("-")[:128] or f"deployment-{index}"


def _limits(
    out: dict[str, Any],
    params: Mapping[str, Any],
    entry: Mapping[str, Any],
    where: str,
    w: Warnings,
) -> None:
    """rpm, tpm (in litellm_params or beside it), weight, prices, order (as ``_order``),
    timeouts and retries (as ``_policy``)."""
    for theirs, ours in (("rpm", "rpm_limit"), ("tpm", "tpm_limit")):
        given = []
        for place, value in (
            (f"litellm_params.{theirs}", params.get(theirs)),
            (theirs, entry.get(theirs)),
        ):
            if value is None:
                continue
            if _positive_int(value):
                given.append(value)
            else:
                w.add(where, f"{place}: {value!r} is not a positive integer; dropped")
        if len(set(given)) > 1:
            w.add(where, f"{theirs} is set twice ({given[0]} and {given[1]}): the lower kept")
        if given:
            out[ours] = min(given)
    _parallel(out, params.get("max_parallel_requests"), where, w)
    weight = params.get("weight")
    if weight is not None:
        if _number(weight) and weight >= 0:
            out["weight"] = weight
        else:
            w.add(where, f"weight: {weight!r} is not a non-negative number; dropped")
    _prices(out, params, where, w)
    order = params.get("order")
    if order is not None:
        if _positive_int(order):
            out["_order"] = order
        else:
            w.add(where, f"order: {order!r} is not a positive integer; dropped")
    policy = {
        name: params[name]
        for name in ("timeout", "stream_timeout", "max_retries")
        if params.get(name) is not None
    }
    if policy:
        out["_policy"] = policy


def _parallel(out: dict[str, Any], value: Any, where: str, w: Warnings) -> None:
    """litellm_params.max_parallel_requests: the deployment's capacity slots."""
    if value is None:
        return
    if not _positive_int(value):
        w.add(where, f"max_parallel_requests: {value!r} is not a positive integer; dropped")
    elif value > MAX_PARALLEL_SLOTS:
        w.add(where, f"max_parallel_requests: {value} is over {MAX_PARALLEL_SLOTS}; dropped")
    else:
        out["max_parallel_requests"] = value


# LiteLLM's per-token price fields and the deployment's per-million ones.
_PRICES = (
    ("input_cost_per_token", "input_price_per_mtok"),
    ("output_cost_per_token", "output_price_per_mtok"),
    ("cache_read_input_token_cost", "cache_read_price_per_mtok"),
    ("cache_creation_input_token_cost", "cache_write_price_per_mtok"),
)


def _prices(out: dict[str, Any], source: Mapping[str, Any], where: str, w: Warnings) -> None:
    for theirs, ours in _PRICES:
        value = source.get(theirs)
        if value is None:
            continue
        if _number(value) and value >= 0:
            out[ours] = round(value * 1_000_000, 6)
        else:
            w.add(where, f"{theirs}: {value!r} is not a price; dropped")


def _info(out: dict[str, Any], info: Any, where: str, w: Warnings) -> bool:
    """model_info's mode, vision and prices; False if its mode has no edgeproxy endpoint."""
    if not isinstance(info, Mapping):
        w.add(where, "model_info is not a mapping; ignored")
        return True
    mode = info.get("mode")
    if mode is not None:
        if mode not in _MODES:
            w.skip(where, f"model_info.mode {mode!r} has no edgeproxy endpoint")
            return False
        if "operations" in out and out["operations"] != _MODES[mode]:
            w.add(where, f"model_info.mode {mode!r} overrides what the provider prefix implies")
        out["operations"] = _MODES[mode]
    if info.get("supports_vision") is True:
        out["modalities"] = ["text", "image"]
    if "input_price_per_mtok" not in out and "output_price_per_mtok" not in out:
        _prices(out, info, where, w)
    for theirs, ours in _WINDOW:
        value = info.get(theirs)
        if value is None or ours in out:
            continue
        if _positive_int(value):
            out[ours] = value
        else:
            w.add(where, f"model_info.{theirs}: {value!r} is not a positive integer; dropped")
    for extra in sorted(set(info) - INFO):
        w.add(where, f"model_info.{extra} has no equivalent; dropped")
    return True


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
