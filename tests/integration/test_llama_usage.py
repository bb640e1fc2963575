"""Usage on every surface against a real server's own counts (llama-cpp-python, SmolLM2-135M).

llama-cpp-python's server reports usage in its JSON answers but ignores
``stream_options``: its streams never carry a usage chunk, whoever asks. So
every JSON surface must report exactly the server's counts, unmarked, and
every streamed surface the gateway's estimate, marked ``edgeproxy_estimated``
and equal to what the request log (and so spend and tpm) counted. The
server's own counts come from asking it directly, at temperature 0 and an
output limit the model always reaches (so the output count is the limit).
The estimate's output is checked against that limit. Its prompt is the
deployment's calibrated count for the request's protocol
(``service.limits.calibrations``), learned from the JSON answers before it:
for the same body it is the server's count to within ``SAME_BODY`` tokens
(chat: 37, where the text alone says 10; a legacy completion: 3, where one
ratio for both protocols said 14), and for another prompt of the same
protocol within ``OTHER_PROMPT`` of it (the ratio scales the chat template's
fixed tokens with the prompt's length).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
import httpx
import openai
import pytest

from edgeproxy.routing.estimates.tokens import prompt_estimate
from tests.fixtures.clock import FleetClock
from tests.fixtures.llama import MODEL_ALIAS, LlamaServer
from tests.fixtures.sse import sse_payloads
from tests.integration.resilience.helpers import router
from tests.integration.usage.helpers import ENV, gateway_config, new_key, records

pytestmark = pytest.mark.slow

LIMIT = 16  # output tokens: SmolLM2 says more than this about the sea, so it stops at the limit
SAME_BODY = 1  # tokens: the estimate against the server's count for a body it counted before
OTHER_PROMPT = 0.25  # relative: against the server's count for another prompt
PATIENT = {"response_ms": 60_000, "idle_ms": 30_000, "total_ms": 120_000}
QUESTION = "Write one sentence about the sea."
PROMPT = "The sea is"
MESSAGES = [{"role": "user", "content": QUESTION}]
OTHER_MESSAGES = [{"role": "user", "content": "Write two sentences about the moon and the stars."}]
OTHER_PROMPT_TEXT = "Once upon a time, in a small village by the sea, there lived"


def _own(server: LlamaServer, path: str, body: dict[str, Any]) -> tuple[int, int]:
    """The server's own (prompt, completion) count for ``body``, asked directly."""
    answer = httpx.post(
        server.base_url + path,
        json={"model": MODEL_ALIAS, "max_tokens": LIMIT, "temperature": 0, **body},
        timeout=120,
    )
    assert answer.status_code == 200, answer.text
    usage = answer.json()["usage"]
    return usage["prompt_tokens"], usage["completion_tokens"]


class _Log:
    """The gateway's request log, read one new record at a time."""

    def __init__(self, base_url: str, clock: FleetClock) -> None:
        self._base_url, self._clock, self._seen = base_url, clock, 0

    def next(self) -> dict[str, Any]:
        self._seen += 1
        newest = records(self._base_url, self._clock.now(), self._seen)[0]
        assert newest["outcome"] == "success", newest
        return newest


def _responses(base_url: str, key: str, body: dict[str, Any]) -> httpx.Response:
    answer = httpx.post(
        base_url + "/v1/responses",
        json=body,
        headers={"authorization": f"Bearer {key}"},
        timeout=180,
    )
    assert answer.status_code == 200, answer.text
    return answer


def _counted(record: dict[str, Any]) -> tuple[int, int]:
    return record["prompt_tokens"], record["completion_tokens"]


def _exact(shown: tuple[int, int], extra: dict[str, Any] | None, record: dict[str, Any]) -> None:
    """A JSON surface: the server's own count, unmarked, as the log counted it."""
    assert shown == _counted(record)
    assert "edgeproxy_estimated" not in (extra or {})
    assert record["usage_estimated"] is False


def _estimated(
    shown: tuple[int, int],
    extra: dict[str, Any] | None,
    record: dict[str, Any],
    own_prompt: int,
    tolerance: float = SAME_BODY,
) -> None:
    """A streamed surface: the gateway's estimate, marked, as the log counted it; its prompt
    within ``tolerance`` of the server's ``own_prompt`` (tokens; below 1: relative)."""
    assert shown == _counted(record)
    allowed = tolerance if tolerance >= 1 else tolerance * own_prompt
    assert abs(shown[0] - own_prompt) <= allowed, (shown, own_prompt)
    # Against the server's own: it wrote LIMIT tokens; the estimate counts 4 characters a token.
    assert LIMIT // 2 <= shown[1] <= 2 * LIMIT, shown
    assert (extra or {})["edgeproxy_estimated"] is True
    assert record["usage_estimated"] is True


def test_each_surface_reports_the_servers_count_or_a_marked_estimate_of_it(
    start_gateway: Any, clock: FleetClock, llama_server: Callable[..., LlamaServer]
) -> None:
    server = llama_server()
    chat_own = _own(server, "/chat/completions", {"messages": MESSAGES})
    text_own = _own(server, "/completions", {"prompt": PROMPT})
    assert chat_own[1] == text_own[1] == LIMIT
    other_chat_own = _own(server, "/chat/completions", {"messages": OTHER_MESSAGES})[0]
    other_text_own = _own(server, "/completions", {"prompt": OTHER_PROMPT_TEXT})[0]
    # The shape this test is about: a chat template of its own, a raw prompt without one.
    assert chat_own[0] > 3 * prompt_estimate({"messages": MESSAGES})
    assert text_own[0] <= prompt_estimate({"prompt": PROMPT}) + 1
    dep = {
        "id": "llama",
        "model": "local",
        "provider": "openai_compat",
        "base_url": server.base_url,
        "upstream_model": MODEL_ALIAS,
        "operations": ["chat", "completions"],
        "stream_usage": True,  # the gateway asks; the server ignores it
    }
    cfg = gateway_config(dep, router=router(json=PATIENT, stream=PATIENT))
    gw = start_gateway(cfg, env=ENV)
    key = new_key(gw.base_url)["key"]
    log = _Log(gw.base_url, clock)
    common: dict[str, Any] = {"model": "local", "temperature": 0}
    oai = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=key, max_retries=0, timeout=180)
    claude = anthropic.Anthropic(base_url=gw.base_url, api_key=key, max_retries=0, timeout=180)

    chat = oai.chat.completions.create(messages=MESSAGES, max_tokens=LIMIT, **common)
    assert chat.usage is not None
    assert (chat.usage.prompt_tokens, chat.usage.completion_tokens) == chat_own
    _exact(
        (chat.usage.prompt_tokens, chat.usage.completion_tokens), chat.usage.model_extra, log.next()
    )

    text = oai.completions.create(prompt=PROMPT, max_tokens=LIMIT, **common)
    assert text.usage is not None
    assert (text.usage.prompt_tokens, text.usage.completion_tokens) == text_own
    _exact(
        (text.usage.prompt_tokens, text.usage.completion_tokens), text.usage.model_extra, log.next()
    )

    message = claude.messages.create(
        model="local", max_tokens=LIMIT, messages=MESSAGES, extra_body={"temperature": 0}
    )
    assert (message.usage.input_tokens, message.usage.output_tokens) == chat_own
    _exact(
        (message.usage.input_tokens, message.usage.output_tokens),
        message.usage.model_extra,
        log.next(),
    )

    responses_body = {**common, "input": QUESTION, "max_output_tokens": LIMIT}
    answered = _responses(gw.base_url, key, responses_body).json()
    responses_own = answered["usage"]["input_tokens"]
    shown = (responses_own, answered["usage"]["output_tokens"])
    _exact(shown, answered["usage"], log.next())

    asked = {"stream": True, "stream_options": {"include_usage": True}}
    chunks = list(
        oai.chat.completions.create(messages=MESSAGES, max_tokens=LIMIT, **asked, **common)
    )
    [usage] = [c.usage for c in chunks if c.usage is not None]
    shown = (usage.prompt_tokens, usage.completion_tokens)
    _estimated(shown, usage.model_extra, log.next(), chat_own[0])

    pieces = list(oai.completions.create(prompt=PROMPT, max_tokens=LIMIT, **asked, **common))
    [usage] = [c.usage for c in pieces if c.usage is not None]
    shown = (usage.prompt_tokens, usage.completion_tokens)
    _estimated(shown, usage.model_extra, log.next(), text_own[0])

    # Other prompts of each protocol: the same ratio, so within OTHER_PROMPT of the server.
    chunks = list(
        oai.chat.completions.create(messages=OTHER_MESSAGES, max_tokens=LIMIT, **asked, **common)
    )
    [usage] = [c.usage for c in chunks if c.usage is not None]
    shown = (usage.prompt_tokens, usage.completion_tokens)
    _estimated(shown, usage.model_extra, log.next(), other_chat_own, OTHER_PROMPT)
    pieces = list(
        oai.completions.create(prompt=OTHER_PROMPT_TEXT, max_tokens=LIMIT, **asked, **common)
    )
    [usage] = [c.usage for c in pieces if c.usage is not None]
    shown = (usage.prompt_tokens, usage.completion_tokens)
    _estimated(shown, usage.model_extra, log.next(), other_text_own, OTHER_PROMPT)

    with claude.messages.stream(
        model="local", max_tokens=LIMIT, messages=MESSAGES, extra_body={"temperature": 0}
    ) as stream:
        [delta] = [e for e in stream if e.type == "message_delta"]
    shown = (delta.usage.input_tokens or 0, delta.usage.output_tokens)
    _estimated(shown, delta.usage.model_extra, log.next(), chat_own[0])

    answer = _responses(gw.base_url, key, {**responses_body, "stream": True})
    events = sse_payloads(answer.text)
    [done] = [
        e["response"]
        for e in events
        if e.get("type") in ("response.completed", "response.incomplete")
    ]
    usage_ = done["usage"]
    shown = (usage_["input_tokens"], usage_["output_tokens"])
    _estimated(shown, usage_, log.next(), responses_own)
    oai.close()
    claude.close()
