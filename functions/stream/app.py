"""Lambda entry point of the streaming endpoint: uvicorn serves this app, the Lambda Web Adapter forwards each Function URL invocation to it (run.sh)."""

from edgeproxy.api.streaming import build_streaming_app

app = build_streaming_app()
