"""Check a running edgeproxy (deployed or local) with the stock openai SDK, one line per call.

    export EDGEPROXY_CLIENT_KEY=ep-...
    python -m edgeproxy_dev.smoke --url https://abc.execute-api.eu-west-1.amazonaws.com/prod \\
        --stream-url https://xyz.lambda-url.eu-west-1.on.aws --key-env EDGEPROXY_CLIENT_KEY

Runs ``models.list``, a chat completion, a streamed chat completion against
``--stream-url`` (required: the streaming endpoint, StreamUrl) and an
embedding, prints ``PASS``/``FAIL`` with the time each took, and exits 1 if
any failed. The stream passes only if its chunks arrived spread out in time
(first to last at least ``--min-stream-spread-ms`` apart): a buffering
endpoint (the HTTP API, ApiUrl) delivers every chunk at once, however many
there are. The key is read from the named environment variable, never from
an argument.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import openai
from openai.types.chat import ChatCompletionMessageParam


@dataclass(frozen=True, slots=True)
class Result:
    name: str
    ok: bool
    detail: str
    seconds: float


def _check(name: str, call: Callable[[], str]) -> Result:
    started = time.monotonic()
    try:
        detail = call()
        ok = True
    except Exception as exc:  # report every failure of the call, whatever its kind
        detail = f"{type(exc).__name__}: {str(exc)[:200]}"
        ok = False
    return Result(name, ok, detail, time.monotonic() - started)


# A model streams its tokens over hundreds of milliseconds; a buffered answer's chunks
# are parsed from one body within a millisecond or two.
MIN_STREAM_SPREAD_MS = 50.0


def run(
    url: str,
    stream_url: str,
    key: str,
    model: str,
    embedding_model: str | None,
    min_stream_spread_ms: float = MIN_STREAM_SPREAD_MS,
) -> list[Result]:
    """Call each API once; returns one result per call."""
    client = openai.OpenAI(base_url=url.rstrip("/") + "/v1", api_key=key, max_retries=0)
    streamer = openai.OpenAI(base_url=stream_url.rstrip("/") + "/v1", api_key=key, max_retries=0)
    hello: list[ChatCompletionMessageParam] = [
        {"role": "user", "content": "Say hello in five words."}
    ]

    def models() -> str:
        ids = [m.id for m in client.models.list().data]
        if model not in ids:
            raise LookupError(f"{model} not in {ids}")
        return f"{len(ids)} models"

    def chat() -> str:
        answer = client.chat.completions.create(model=model, messages=hello, max_tokens=32)
        return (answer.choices[0].message.content or "")[:60]

    def stream() -> str:
        arrivals: list[float] = []
        text = ""
        for chunk in streamer.chat.completions.create(
            model=model,
            messages=hello,
            max_tokens=32,
            stream=True,
        ):
            arrivals.append(time.monotonic())
            if chunk.choices:
                text += chunk.choices[0].delta.content or ""
        if not text:
            raise ValueError("the stream carried no text")
        spread_ms = (arrivals[-1] - arrivals[0]) * 1000
        if spread_ms < min_stream_spread_ms:
            raise ValueError(
                f"{len(arrivals)} chunks arrived together (within {spread_ms:.1f} ms): "
                "the endpoint buffers streams; is --stream-url the StreamUrl?"
            )
        return f"{len(arrivals)} chunks over {spread_ms:.0f} ms: {text[:40]}"

    def embeddings() -> str:
        assert embedding_model is not None
        answer = client.embeddings.create(model=embedding_model, input=["hello"])
        return f"{len(answer.data[0].embedding)} dimensions"

    checks: list[tuple[str, Callable[[], str]]] = [
        ("models", models),
        ("chat", chat),
        ("stream", stream),
    ]
    if embedding_model:
        checks.append(("embeddings", embeddings))
    return [_check(name, call) for name, call in checks]


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, run the checks, print one line each; 0 when all passed."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n", 1)[0] if __doc__ else None,
        epilog="example: python -m edgeproxy_dev.smoke --url http://127.0.0.1:8080 "
        "--stream-url http://127.0.0.1:8080 --key-env EDGEPROXY_CLIENT_KEY",
    )
    parser.add_argument("--url", required=True, help="the buffered endpoint (ApiUrl)")
    parser.add_argument(
        "--stream-url",
        required=True,
        help="the streaming endpoint (StreamUrl; locally the same server as --url)",
    )
    parser.add_argument("--key-env", required=True, help="environment variable holding the key")
    parser.add_argument("--model", default="fast-chat", help="a public chat model")
    parser.add_argument(
        "--embedding-model", default="text-embed", help="a public embedding model ('' to skip)"
    )
    parser.add_argument(
        "--min-stream-spread-ms",
        type=float,
        default=MIN_STREAM_SPREAD_MS,
        help="the least time from a stream's first chunk to its last (default %(default)s)",
    )
    args = parser.parse_args(argv)
    key = os.environ.get(args.key_env)
    if not key:
        parser.error(f"environment variable {args.key_env} is not set")
    results = run(
        args.url,
        args.stream_url,
        key,
        args.model,
        args.embedding_model or None,
        args.min_stream_spread_ms,
    )
    for r in results:
        print(f"{'PASS' if r.ok else 'FAIL'}  {r.name:<11} {r.seconds * 1000:7.0f} ms  {r.detail}")
    failed = [r.name for r in results if not r.ok]
    print(f"smoke: {len(results) - len(failed)} of {len(results)} calls passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
