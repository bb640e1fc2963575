"""Each deployment's prompt-token calibration per protocol, as this process has observed it.

``routing.estimates.calibration`` is the rule; this keeps its values in
process, one per (deployment id, protocol), learned from the prompt counts
upstreams report with their answers. The protocol is the request's
operation as the client spoke it (``ProxyRequest.protocol``: ``openai.chat``,
``openai.completions``, ``openai.responses``, ``anthropic.messages``, ...):
the same deployment counts a chat prompt with its chat template's tokens
and a legacy completion's raw prompt without them, so one ratio for both
would over-count the one or under-count the other.

A new process starts uncalibrated (ratio 1: the estimate alone, which is
conservative on its own); nothing is written to the store, so learning costs
no round trip. At most ``MAX_ENTRIES`` pairs are kept: past that the one
least recently observed is forgotten (a deployment removed from the
configuration stops taking room). Every estimate that needs a deployment's
real counts reads it: the key reservations, the router's context windows
(``routing.estimates.window``) and the explainer's, and a stream's estimate
when its upstream reported no usage.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from edgeproxy.config.deployment import Deployment
from edgeproxy.routing.estimates.calibration import Calibration, highest, observed
from edgeproxy.routing.estimates.tokens import prompt_bound

MAX_ENTRIES = 1024  # (deployment, protocol) pairs kept in one process

_Key = tuple[str, str]  # (deployment id, protocol)


class Calibrations:
    """Per-(deployment, protocol) calibrations of the prompt estimate, at most ``limit``."""

    def __init__(self, limit: int = MAX_ENTRIES) -> None:
        self._limit = max(1, limit)
        self._entries: OrderedDict[_Key, Calibration] = OrderedDict()  # least recent first

    def observe(
        self, deployment_id: str, protocol: str, body: Mapping[str, Any], reported: int
    ) -> None:
        """Learn from one answer: ``reported`` prompt tokens for request ``body``, asked in
        ``protocol`` of ``deployment_id`` (an answer without a count changes nothing)."""
        key = (deployment_id, protocol)
        current = self._entries.get(key, Calibration())
        learned = observed(current, prompt_bound(body), reported)
        if learned is current:
            return
        self._entries[key] = learned
        self._entries.move_to_end(key)
        while len(self._entries) > self._limit:
            self._entries.popitem(last=False)

    def of(self, deployment_id: str, protocol: str) -> Calibration:
        """The deployment's calibration for ``protocol`` (uncalibrated until its first
        counted answer there)."""
        return self._entries.get((deployment_id, protocol), Calibration())

    def view(self, protocol: str) -> Mapping[str, Calibration]:
        """``protocol``'s calibrations, by deployment id (read-only, kept current)."""
        return _ProtocolView(self._entries, protocol)

    def ratio(self, pool: Iterable[Deployment], protocol: str) -> float:
        """The highest ratio among ``pool``'s deployments for ``protocol`` (1 when none is
        calibrated)."""
        return highest(self.of(d.id, protocol) for d in pool)

    def __len__(self) -> int:
        return len(self._entries)


class _ProtocolView(Mapping[str, Calibration]):
    """One protocol's slice of the calibrations, by deployment id, reading them live."""

    __slots__ = ("_entries", "_protocol")

    def __init__(self, entries: Mapping[_Key, Calibration], protocol: str) -> None:
        self._entries = entries
        self._protocol = protocol

    def __getitem__(self, deployment_id: str) -> Calibration:
        return self._entries[(deployment_id, self._protocol)]

    def __iter__(self) -> Iterator[str]:
        return (dep for dep, protocol in list(self._entries) if protocol == self._protocol)

    def __len__(self) -> int:
        return sum(1 for _, protocol in self._entries if protocol == self._protocol)
