"""SnapStart's hooks on the built handler: one snapshot, restored twice (``restore_child.py``).

A restore resumes the snapshot's memory, ``random``'s state included: without
the after-restore hook every environment of a version would draw the same
"random" numbers (retry jitter, the libraries' choices). The control pair
shows that duplication; the restored pair shows the hook ends it and that a
restored process serves a chat request, importing nothing the hooks could
have imported before the snapshot.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.gateway import store
from tests.handlers.expectations import handler_config, handler_environment

ROOT = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("restore_child.py")


def test_each_restore_of_one_snapshot_draws_its_own_numbers_and_serves(
    tmp_path: Path, dynamo_endpoint: str, gateway_table: str, upstream_a: MockUpstream
) -> None:
    store(dynamo_endpoint, gateway_table, handler_config(upstream_a))
    environment = {"PATH": "/usr/bin:/bin", **handler_environment(dynamo_endpoint, gateway_table)}
    done = subprocess.run(  # noqa: S603 - our own interpreter and script
        [
            *(sys.executable, str(CHILD)),
            *(str(ROOT / "functions/proxy/app.py"), str(ROOT / "events/chat.json")),
            str(tmp_path),
        ],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = {p.stem: json.loads(p.read_text()) for p in tmp_path.glob("*.json")}
    # Without the hooks both restores continue the snapshot's one sequence.
    assert report["control0"]["draws"] == report["control1"]["draws"]
    assert report["snapshot"]["before_snapshot_hooks"] == 1
    assert report["snapshot"]["after_restore_hooks"] == 1
    first, second = report["restore0"], report["restore1"]
    assert first["draws"] != second["draws"]
    assert first["draws"] != report["control0"]["draws"]
    for restored in (first, second):
        assert restored["status"] == 200
        assert restored["imported_by_first_event"] == []
