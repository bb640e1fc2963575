"""LiteLLM ``model_list`` entries as edgeproxy deployments (``edgeproxy config import-litellm``).

Pure: a parsed LiteLLM document in, a configuration document (plain dicts,
as in the YAML) and a list of warnings out; ``environ`` resolves the
``os.environ/NAME`` values that are not secrets (``api_base``,
``api_version``, ``aws_region_name``). Key references become credential
references (``os.environ/NAME`` -> ``env:NAME``); a literal key is never
copied. ``config/litellm_router.py`` maps the router settings and fallbacks.

    litellm model                    provider        base_url
    gpt-*, o1*, openai/<m>           openai          https://api.openai.com/v1
    openai/<m> + api_base            openai_compat   api_base
    claude-*, anthropic/<m>          anthropic       https://api.anthropic.com/v1
    hosted_vllm/<m> (+ api_base)     openai_compat   api_base
    groq/, together_ai/, ...         openai_compat   the provider's OpenAI-compatible URL
    azure/<deployment>               azure           api_base (+ api_version)
    bedrock/<model id>               bedrock         (region: aws_region_name)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

OPENAI_URL = "https://api.openai.com/v1"
ANTHROPIC_URL = "https://api.anthropic.com/v1"
COMPAT_URLS = {
    "groq": "https://api.groq.com/openai/v1",
    "together_ai": "https://api.together.xyz/v1",
    "deepseek": "https://api.deepseek.com/v1",
    "mistral": "https://api.mistral.ai/v1",
    "fireworks_ai": "https://api.fireworks.ai/inference/v1",
    "openrouter": "https://openrouter.ai/api/v1",
    "xai": "https://api.x.ai/v1",
    "perplexity": "https://api.perplexity.ai",
    "deepinfra": "https://api.deepinfra.com/v1/openai",
}
SELF_HOSTED = frozenset({"hosted_vllm", "custom_openai", "lm_studio", "llamafile"})
_OPENAI_NAMES = ("gpt-", "o1", "o3", "o4", "chatgpt-", "text-embedding-", "davinci", "babbage")
_MODES = {"chat": ["chat"], "completion": ["completions"], "embedding": ["embeddings"]}
_ENV = "os.environ/"
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
        "weight",
        "order",
        "timeout",
        "stream_timeout",
        "max_retries",
        "input_cost_per_token",
        "output_cost_per_token",
    }
)
INFO = frozenset({"id", "mode", "supports_vision", "input_cost_per_token", "output_cost_per_token"})
_BEDROCK_ROUTES = ("converse/", "invoke/")
_AWS_AUTH = frozenset(
    {
        "aws_access_key_id",
        "aws_secret_access_key",
        "aws_session_token",
        "aws_role_name",
        "aws_profile_name",
    }
)


class Warnings(list[str]):
    """The settings the conversion could not map, each a line for stderr."""

    def add(self, where: str, message: str) -> None:
        self.append(f"{where}: {message}")


def deployment(
    entry: Any, index: int, environ: Mapping[str, str], warnings: Warnings
) -> dict[str, Any] | None:
    """One ``model_list`` entry as a deployment (``order`` kept aside), or None if it cannot be.

    The deployment's ``id`` is ``model_info.id`` or ``<model_name>-<index>``
    (made unique by ``deployments``).
    """
    where = f"model_list[{index}]"
    if not isinstance(entry, Mapping):
        warnings.add(where, "not a mapping; skipped")
        return None
    name, params = entry.get("model_name"), entry.get("litellm_params")
    info = entry.get("model_info") or {}
    if not isinstance(name, str) or not name or not isinstance(params, Mapping):
        warnings.add(where, "needs model_name and litellm_params; skipped")
        return None
    if "*" in name:
        warnings.add(where, f"wildcard model_name {name!r} has no equivalent; skipped")
        return None
    model = params.get("model")
    if not isinstance(model, str) or not model:
        warnings.add(where, "litellm_params.model is missing; skipped")
        return None
    where = f"{where} ({name})"
    target = _target(model, params, environ, where, warnings)
    if target is None:
        return None
    out: dict[str, Any] = {"id": _id(info.get("id"), name, index), "model": name, **target}
    key = params.get("api_key")
    if isinstance(key, str) and key.startswith(_ENV):
        out["credential"] = "env:" + key[len(_ENV) :]
    elif key is not None:
        warnings.add(
            where,
            "a literal api_key is not copied (credentials are references): store it in SSM "
            "or Secrets Manager and set credential: ssm:/edgeproxy/... on this deployment",
        )
    _limits(out, params, where, warnings)
    _info(out, info, where, warnings)
    for extra in sorted(set(params) - PARAMS):
        hint = " (Bedrock is called with the function's IAM role)" if extra in _AWS_AUTH else ""
        warnings.add(where, f"litellm_params.{extra} has no equivalent; dropped{hint}")
    return out


def _target(
    model: str, params: Mapping[str, Any], environ: Mapping[str, str], where: str, w: Warnings
) -> dict[str, Any] | None:
    """provider, base_url, upstream_model (and azure/bedrock's own fields) for ``model``."""
    prefix, _, rest = model.partition("/") if "/" in model else ("", "", model)
    base = _plain(params.get("api_base"), "api_base", environ, where, w)
    if params.get("api_base") and not base:
        w.add(where, "its api_base could not be read; skipped (it must not fall back to another)")
        return None
    if prefix == "" and rest.startswith("claude-"):
        prefix = "anthropic"
    elif prefix == "" and rest.startswith(_OPENAI_NAMES):
        prefix = "openai"
    if prefix in ("openai", "text-completion-openai"):
        out = _kind("openai_compat" if base else "openai", base or OPENAI_URL, rest)
        if prefix == "text-completion-openai":
            out["operations"] = ["completions"]
        return out
    if prefix == "anthropic":
        root = base.rstrip("/") if base else ANTHROPIC_URL
        # LiteLLM appends /v1/messages to api_base; edgeproxy's base_url ends in /v1.
        return _kind("anthropic", root if root.endswith("/v1") else root + "/v1", rest)
    if prefix in SELF_HOSTED or prefix in COMPAT_URLS:
        compat = base or COMPAT_URLS.get(prefix)
        if compat is None:
            w.add(where, f"{prefix}/ needs an api_base; skipped")
            return None
        return _kind("openai_compat", compat, rest)
    if prefix == "azure":
        if not base:
            w.add(where, "azure/ needs an api_base; skipped")
            return None
        out = _kind("azure", base, rest)
        version = _plain(params.get("api_version"), "api_version", environ, where, w)
        if version:
            out["api_version"] = version
        return out
    if prefix == "bedrock":
        for route in _BEDROCK_ROUTES:
            rest = rest.removeprefix(route)
        out = {"provider": "bedrock", "upstream_model": rest}
        region = _plain(params.get("aws_region_name"), "aws_region_name", environ, where, w)
        if region:
            out["region"] = region
        else:
            w.add(where, "no aws_region_name: the deployment takes the function's region")
        return out
    w.add(
        where, f"model {model!r}: provider {prefix or 'unknown'!r} has no edgeproxy kind; skipped"
    )
    return None


def _kind(provider: str, base_url: str, upstream_model: str) -> dict[str, Any]:
    return {"provider": provider, "base_url": base_url, "upstream_model": upstream_model}


def _plain(
    value: Any, name: str, environ: Mapping[str, str], where: str, w: Warnings
) -> str | None:
    """A non-secret parameter, ``os.environ/NAME`` read from ``environ`` now."""
    if isinstance(value, str) and value.startswith(_ENV):
        variable = value[len(_ENV) :]
        resolved = environ.get(variable)
        if not resolved:
            w.add(where, f"{name} is {value} but ${variable} is not set here; left out")
        return resolved or None
    return value if isinstance(value, str) and value else None


def _id(given: Any, name: str, index: int) -> str:
    raw = given if isinstance(given, str) and given else f"{name}-{index}"
    return _ID_CHARS.sub("-", raw).strip("-")[:128] or f"deployment-{index}"


def _limits(out: dict[str, Any], params: Mapping[str, Any], where: str, w: Warnings) -> None:
    """rpm, tpm, weight, prices, order (as ``_order``), timeouts and retries (as ``_policy``)."""
    for theirs, ours in (("rpm", "rpm_limit"), ("tpm", "tpm_limit")):
        value = params.get(theirs)
        if value is not None:
            if _positive_int(value):
                out[ours] = value
            else:
                w.add(where, f"{theirs}: {value!r} is not a positive integer; dropped")
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


def _prices(out: dict[str, Any], source: Mapping[str, Any], where: str, w: Warnings) -> None:
    for side in ("input", "output"):
        value = source.get(f"{side}_cost_per_token")
        if value is None:
            continue
        if _number(value) and value >= 0:
            out[f"{side}_price_per_mtok"] = round(value * 1_000_000, 6)
        else:
            w.add(where, f"{side}_cost_per_token: {value!r} is not a price; dropped")


def _info(out: dict[str, Any], info: Any, where: str, w: Warnings) -> None:
    if not isinstance(info, Mapping):
        w.add(where, "model_info is not a mapping; ignored")
        return
    mode = info.get("mode")
    if mode is not None:
        if mode in _MODES:
            out["operations"] = _MODES[mode]
        else:
            w.add(where, f"model_info.mode {mode!r} has no edgeproxy operation; chat assumed")
    if info.get("supports_vision") is True:
        out["modalities"] = ["text", "image"]
    if "input_price_per_mtok" not in out and "output_price_per_mtok" not in out:
        _prices(out, info, where, w)
    for extra in sorted(set(info) - INFO):
        w.add(where, f"model_info.{extra} has no equivalent; dropped")


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
