"""The credentials LiteLLM finds by itself: each provider's default environment variable.

A LiteLLM entry without ``api_key`` still authenticates: LiteLLM reads the
provider's own variable (``OPENROUTER_API_KEY`` for ``openrouter/``, ...).
edgeproxy never reads a key it was not told about, so the importer writes
that variable as the deployment's credential reference (``env:NAME``) and
says so; a deployment of a provider that needs a key and has none would load,
show "available" and answer every request with the upstream's 401.

    provider prefix         variable
    openai, text-completion-openai, (gpt-*, o1*, ...)   OPENAI_API_KEY
    anthropic, (claude-*)   ANTHROPIC_API_KEY
    azure                   AZURE_API_KEY (and AZURE_API_BASE, AZURE_API_VERSION)
    groq ... deepinfra      see ``DEFAULT_KEYS``
"""

from __future__ import annotations

from collections.abc import Mapping

# LiteLLM's default variable per provider prefix (the first name it reads).
DEFAULT_KEYS = {
    "openai": "OPENAI_API_KEY",
    "text-completion-openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "azure": "AZURE_API_KEY",
    "groq": "GROQ_API_KEY",
    "together_ai": "TOGETHERAI_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "fireworks_ai": "FIREWORKS_AI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "xai": "XAI_API_KEY",
    "perplexity": "PERPLEXITYAI_API_KEY",
    "deepinfra": "DEEPINFRA_API_KEY",
}
# Servers one runs oneself: commonly without a key, so none is assumed.
KEYLESS = frozenset(
    {
        "hosted_vllm",
        "custom_openai",
        "lm_studio",
        "llamafile",
        "ollama",
        "ollama_chat",
        "huggingface",
    }
)
AZURE_BASE, AZURE_VERSION = "AZURE_API_BASE", "AZURE_API_VERSION"


def default_credential(
    prefix: str, own_base: bool, environ: Mapping[str, str]
) -> tuple[str | None, str | None]:
    """The credential reference for an entry without ``api_key``, and the warning to give.

    ``own_base``: the entry sets its ``api_base`` (``openai/<m>`` at a server of
    one's own may need no key: it gets none, with a warning saying how to add one).
    """
    variable = DEFAULT_KEYS.get(prefix)
    if prefix in KEYLESS or variable is None:
        return None, None
    unset = "" if environ.get(variable) else f" (${variable} is not set in this shell)"
    if prefix == "openai" and own_base:
        return None, (
            f"no api_key: sent without a credential (LiteLLM would send ${variable}); "
            f"add credential: env:{variable} if the server needs one"
        )
    return f"env:{variable}", (
        f"no api_key: LiteLLM reads ${variable} by default; written as credential: "
        f"env:{variable}, so the gateway's functions need that variable{unset}"
    )
