"""Where a LiteLLM ``litellm_params.model`` is served: provider kind, base URL, upstream model.

litellm model                    provider        base_url
gpt-*, o1*, openai/<m>           openai          https://api.openai.com/v1
openai/<m> + api_base            openai_compat   api_base
claude-*, anthropic/<m>          anthropic       https://api.anthropic.com/v1
hosted_vllm/<m> (+ api_base)     openai_compat   api_base
ollama/<m>, ollama_chat/<m>      openai_compat   api_base (default localhost:11434) + /v1
groq/, together_ai/, ...         openai_compat   the provider's OpenAI-compatible URL
azure/<deployment>               azure           api_base (+ api_version)
bedrock/<model id>               bedrock         (region: aws_region_name)
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from edgeproxy.config.litellm_keys import AZURE_BASE, AZURE_VERSION
from edgeproxy.config.litellm_warnings import Warnings

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
OLLAMA = frozenset({"ollama", "ollama_chat"})
OLLAMA_URL = "http://localhost:11434"
ENV = "os.environ/"
_OPENAI_NAMES = ("gpt-", "o1", "o3", "o4", "chatgpt-", "text-embedding-", "davinci", "babbage")
_BEDROCK_ROUTES = ("converse/", "invoke/")


def split_model(model: str) -> tuple[str, str]:
    """``(provider prefix, model)``; a bare ``claude-*`` / ``gpt-*`` name gets its provider."""
    prefix, _, rest = model.partition("/") if "/" in model else ("", "", model)
    if prefix == "" and rest.startswith("claude-"):
        prefix = "anthropic"
    elif prefix == "" and rest.startswith(_OPENAI_NAMES):
        prefix = "openai"
    return prefix, rest


def target(
    prefix: str,
    rest: str,
    params: Mapping[str, Any],
    environ: Mapping[str, str],
    where: str,
    w: Warnings,
) -> dict[str, Any] | None:
    """provider, base_url, upstream_model (and azure/bedrock's own fields) for ``model``."""
    base = plain(params.get("api_base"), "api_base", environ, where, w)
    if params.get("api_base") and not base:
        w.skip(where, "its api_base could not be read (it must not fall back to another)")
        return None
    if not rest:
        w.skip(where, f"litellm_params.model {prefix + '/'!r} names no model")
        return None
    if prefix in ("openai", "text-completion-openai"):
        out = _kind("openai_compat" if base else "openai", base or OPENAI_URL, rest)
        if prefix == "text-completion-openai":
            out["operations"] = ["completions"]
        return out
    if prefix == "anthropic":
        root = base.rstrip("/") if base else ANTHROPIC_URL
        # LiteLLM appends /v1/messages to api_base; edgeproxy's base_url ends in /v1.
        return _kind("anthropic", root if root.endswith("/v1") else root + "/v1", rest)
    if prefix in OLLAMA:
        # Ollama's OpenAI-compatible API is under /v1 of the address LiteLLM is given.
        root = (base or OLLAMA_URL).rstrip("/")
        if not base:
            w.add(where, f"no api_base: {OLLAMA_URL} assumed, as LiteLLM does")
        return _kind("openai_compat", root if root.endswith("/v1") else root + "/v1", rest)
    if prefix == "huggingface":
        if not base:
            w.skip(where, "huggingface/ without api_base (the hosted inference API) has no kind")
            return None
        # A text-generation-inference server: its OpenAI-compatible API is under /v1.
        root = base.rstrip("/")
        return _kind("openai_compat", root if root.endswith("/v1") else root + "/v1", rest)
    if prefix in SELF_HOSTED or prefix in COMPAT_URLS:
        compat = base or COMPAT_URLS.get(prefix)
        if compat is None:
            w.skip(where, f"{prefix}/ needs an api_base")
            return None
        return _kind("openai_compat", compat, rest)
    if prefix == "azure":
        return _azure(rest, base, params, environ, where, w)
    if prefix == "bedrock":
        for route in _BEDROCK_ROUTES:
            rest = rest.removeprefix(route)
        out = {"provider": "bedrock", "upstream_model": rest}
        region = plain(params.get("aws_region_name"), "aws_region_name", environ, where, w)
        if region:
            out["region"] = region
        else:
            w.add(where, "no aws_region_name: the deployment takes the function's region")
        return out
    kind = f"provider {prefix!r}" if prefix else "a model name of no known provider"
    w.skip(where, f"{kind} has no edgeproxy kind")
    return None


def _azure(
    rest: str,
    base: str | None,
    params: Mapping[str, Any],
    environ: Mapping[str, str],
    where: str,
    w: Warnings,
) -> dict[str, Any] | None:
    if not base and environ.get(AZURE_BASE):
        base = environ[AZURE_BASE]
        w.add(where, f"no api_base: ${AZURE_BASE} read from this shell, as LiteLLM does")
    if not base:
        w.skip(where, f"azure/ needs an api_base (or ${AZURE_BASE} set when importing)")
        return None
    out = _kind("azure", base, rest)
    version = plain(params.get("api_version"), "api_version", environ, where, w)
    if not version and environ.get(AZURE_VERSION):
        version = environ[AZURE_VERSION]
    if version:
        out["api_version"] = version
    else:
        w.add(where, "no api_version: the gateway sends its default api-version")
    return out


def _kind(provider: str, base_url: str, upstream_model: str) -> dict[str, Any]:
    return {"provider": provider, "base_url": base_url, "upstream_model": upstream_model}


def plain(value: Any, name: str, environ: Mapping[str, str], where: str, w: Warnings) -> str | None:
    """A non-secret parameter, ``os.environ/NAME`` read from ``environ`` now."""
    if isinstance(value, datetime.date):  # an unquoted api_version: 2024-10-21 reads as a date
        return value.isoformat()
    if isinstance(value, str) and value.startswith(ENV):
        variable = value[len(ENV) :]
        resolved = environ.get(variable)
        if not resolved:
            w.add(where, f"{name} is {value} but ${variable} is not set here; left out")
        return resolved or None
    return value if isinstance(value, str) and value else None
