"""The process's per-(deployment, protocol) prompt calibrations (``service.limits.calibrations``)."""

from __future__ import annotations

from edgeproxy.config.deployment import Deployment
from edgeproxy.routing.estimates.calibration import Calibration
from edgeproxy.routing.estimates.tokens import prompt_bound, unreported_usage
from edgeproxy.service.limits.calibrations import MAX_ENTRIES, Calibrations

BODY = {"messages": [{"role": "user", "content": "Hello!"}]}
PROMPT = {"prompt": "The sea is"}  # a legacy completion: no messages, no template
CHAT, TEXT = "openai.chat", "openai.completions"


def _deployment(dep_id: str) -> Deployment:
    return Deployment.model_validate(
        {
            "id": dep_id,
            "model": "m",
            "provider": "openai",
            "upstream_model": "u",
            "base_url": "https://api.openai.com/v1",
        }
    )


def test_each_deployment_learns_from_its_own_answers() -> None:
    cals = Calibrations()
    a, b = _deployment("a"), _deployment("b")
    assert cals.ratio([a, b], CHAT) == 1.0  # uncalibrated: the estimate alone
    cals.observe("a", CHAT, BODY, reported=2 * prompt_bound(BODY))
    assert cals.of("a", CHAT).ratio == 2.0
    assert cals.of("b", CHAT).samples == 0
    assert cals.ratio([b], CHAT) == 1.0
    assert cals.ratio([a, b], CHAT) == 2.0


def test_a_deployments_chat_and_completion_prompts_are_calibrated_apart() -> None:
    # llama.cpp's server counted 37 for a chat prompt the bound puts at 17 (its template),
    # and 3 for a raw completion prompt the bound puts at 3 (the text alone).
    chat = {"messages": [{"role": "user", "content": "Write one sentence about the sea."}]}
    cals = Calibrations()
    cals.observe("llama", CHAT, chat, reported=37)
    cals.observe("llama", TEXT, PROMPT, reported=3)
    assert cals.of("llama", CHAT).ratio == round(37 / prompt_bound(chat), 6)
    assert cals.of("llama", TEXT) == Calibration(1.0, 1)
    assert cals.of("llama", "anthropic.messages") == Calibration()  # not learned from chat
    # A stream without a usage chunk counts each as the server did; one key for both
    # would have counted the completion's prompt at 7.
    assert unreported_usage(chat, "", cals.of("llama", CHAT))[0] == 37
    assert unreported_usage(PROMPT, "", cals.of("llama", TEXT))[0] == 3
    assert unreported_usage(PROMPT, "", cals.of("llama", CHAT))[0] == 7
    dep = _deployment("llama")
    assert cals.ratio([dep], TEXT) == 1.0
    assert cals.ratio([dep], CHAT) == cals.of("llama", CHAT).ratio > 2


def test_a_protocols_view_is_read_live_and_holds_only_its_own_deployments() -> None:
    cals = Calibrations()
    chat = cals.view(CHAT)
    assert dict(chat) == {}
    cals.observe("a", CHAT, BODY, reported=30)
    cals.observe("b", TEXT, PROMPT, reported=3)
    cals.observe("c", CHAT, BODY, reported=20)
    assert sorted(chat) == ["a", "c"]
    assert len(chat) == 2
    assert chat["a"] == cals.of("a", CHAT)
    assert chat.get("b") is None
    assert dict(cals.view(TEXT)) == {"b": cals.of("b", TEXT)}


def test_an_answer_without_a_count_takes_no_room() -> None:
    cals = Calibrations()
    cals.observe("a", CHAT, BODY, reported=0)
    assert len(cals) == 0
    assert cals.of("a", CHAT) == Calibration()


def test_entries_are_bounded_and_the_least_recently_observed_is_forgotten() -> None:
    assert MAX_ENTRIES >= 64  # room for a large configuration's deployments and protocols
    cals = Calibrations(limit=3)
    for dep in ("a", "b", "c"):
        cals.observe(dep, CHAT, BODY, reported=20)
    cals.observe("a", CHAT, BODY, reported=20)  # observed again: now the most recent
    cals.observe("d", TEXT, PROMPT, reported=3)
    assert len(cals) == 3
    assert cals.of("b", CHAT) == Calibration()  # the least recent went
    assert cals.of("a", CHAT).samples == 2
    assert cals.of("c", CHAT).samples == 1
    assert cals.of("d", TEXT).samples == 1
    for n in range(100):
        cals.observe(f"gone-{n}", CHAT, BODY, reported=20)
    assert len(cals) == 3
    assert sorted(cals.view(CHAT)) == ["gone-97", "gone-98", "gone-99"]
