"""Lambda entry point of the streaming endpoint: uvicorn serves this app, the Lambda Web Adapter forwards each Function URL invocation to it (run.sh)."""

from edgeproxy.entrypoint import lean_init

with lean_init():  # what the cold start need not pay (entrypoint.py)
    from edgeproxy.api.streaming import build_streaming_app

    app = build_streaming_app()
