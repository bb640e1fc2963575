#!/bin/sh
# Started by the Lambda Web Adapter (AWS_LAMBDA_EXEC_WRAPPER=/opt/bootstrap) once per
# execution environment. The layer's packages are under /opt/python; uvicorn is
# packaged with this function (requirements.txt). Loopback only: the adapter is
# the only client.
PATH="$PATH:$LAMBDA_TASK_ROOT/bin" \
PYTHONPATH="$PYTHONPATH:/opt/python:$LAMBDA_RUNTIME_DIR" \
exec python -m uvicorn --host 127.0.0.1 --port "${AWS_LWA_PORT:-8080}" \
  --no-access-log --timeout-keep-alive 60 app:app
