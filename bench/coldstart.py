"""Cold start of the proxy handler, and what each dependency costs to import.

Every figure comes from a fresh interpreter (``sys.executable``), so nothing
is already imported or cached in memory (the OS page cache is warm, as it is
for a Lambda runtime that has run before on the same host).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.processes import put_admin_key
from bench.workloads import ADMIN_KEY_REF, CLIENT_KEY
from edgeproxy_dev.dynamo_server import DUMMY_CREDENTIALS
from edgeproxy_dev.runner import MOCK_KEY

ROOT = Path(__file__).resolve().parents[1]
# What functions/proxy/app.py pulls in, heaviest suspects first; "edgeproxy.api.handler"
# is the whole handler module (all of these together, shared ones counted once).
DEPENDENCIES = (
    "aioboto3",
    "aiobotocore.session",
    "botocore.session",
    "aws_lambda_powertools",
    "pydantic",
    "httpx",
    "starlette.applications",
    "mangum",
    "yaml",
    "edgeproxy.api.handler",
)


def lambda_env(store_url: str, table: str) -> dict[str, str]:
    """The environment a deployed proxy function would have, pointed at the bench store.

    Its admin key is the template's default ``ssm:`` reference: the first
    request reads it from the bench store's SSM (``AWS_ENDPOINT_URL``, as a
    deployment's endpoint would be the region's).
    """
    return {
        **os.environ,
        "EDGEPROXY_DYNAMODB_ENDPOINT": store_url,
        "AWS_ENDPOINT_URL": store_url,
        "EDGEPROXY_ADMIN_KEY_REF": ADMIN_KEY_REF,
        "EDGEPROXY_TABLE": table,
        "EDGEPROXY_CRED_MOCK_KEY": MOCK_KEY,
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": DUMMY_CREDENTIALS["aws_access_key_id"],
        "AWS_SECRET_ACCESS_KEY": DUMMY_CREDENTIALS["aws_secret_access_key"],
        "POWERTOOLS_METRICS_NAMESPACE": "edgeproxy-bench",
        "AWS_LAMBDA_FUNCTION_NAME": "edgeproxy-bench",
    }


def cold_start(
    store_url: str, table: str, repeats: int, extra_env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Median over ``repeats`` fresh processes: interpreter start, import+init, first event.

    ``extra_env``: more of the function's environment (e.g. tracing switched on).
    """
    put_admin_key(store_url)  # the ssm: admin key lambda_env names
    runs = []
    for _ in range(repeats):
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as out:
            path = out.name
        try:
            spawned = time.monotonic()
            subprocess.run(  # noqa: S603 - our own interpreter and module
                [sys.executable, "-m", "bench.lambda_child", path, CLIENT_KEY],
                cwd=ROOT,
                env={**lambda_env(store_url, table), **(extra_env or {})},
                stdout=subprocess.DEVNULL,
                check=True,
                timeout=60,
            )
            data = json.loads(Path(path).read_text())
        finally:
            os.unlink(path)
        data["interpreter_s"] = data["started"] - spawned
        data["import_init_s"] = data["imported"] - data["started"]
        data["first_event_s"] = data["first_event_done"] - data["imported"]
        data["cold_start_s"] = data["first_event_done"] - data["started"]
        data["spawn_to_first_answer_s"] = data["first_event_done"] - spawned
        runs.append(data)
    keys = [
        "interpreter_s",
        "import_init_s",
        "first_event_s",
        "cold_start_s",
        "spawn_to_first_answer_s",
        "warm_event_s",
    ]
    summary: dict[str, Any] = {k: statistics.median(r[k] for r in runs) for k in keys}
    summary["rss_after_events_mib"] = statistics.median(
        r["memory_after_events_mib"]["VmRSS"] for r in runs
    )
    summary["rss_after_import_mib"] = statistics.median(
        r["memory_after_import_mib"]["VmRSS"] for r in runs
    )
    summary["modules"] = runs[-1]["modules"]
    summary["warm_store_calls"] = runs[-1]["warm_store_calls"]
    summary["repeats"] = repeats
    return summary


def import_times(modules: tuple[str, ...] = DEPENDENCIES) -> dict[str, float]:
    """Seconds to import each module alone (with everything it imports) in a fresh process."""
    code = "import time, importlib, sys; t = time.perf_counter(); importlib.import_module(sys.argv[1]); print(time.perf_counter() - t)"
    out = {}
    for name in modules:
        done = subprocess.run(  # noqa: S603 - our own interpreter
            [sys.executable, "-c", code, name],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        out[name] = float(done.stdout.strip())
    return out


def import_tree(top: int = 15) -> list[tuple[str, float]]:
    """``python -X importtime`` of the handler module: import seconds per top-level package.

    Each module's own (self) time is charged to its top-level package, so the
    rows add up to the whole import and shared dependencies count once,
    unlike ``import_times``.
    """
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import edgeproxy.api.handler"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    totals: dict[str, float] = {}
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        own, _cumulative, name = line.removeprefix("import time:").split("|")
        package = name.strip().split(".", 1)[0]
        totals[package] = totals.get(package, 0.0) + int(own) / 1e6
    return sorted(totals.items(), key=lambda row: row[1], reverse=True)[:top]
