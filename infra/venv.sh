#!/usr/bin/env bash
# make's venvs: infra/venv.sh DIR SPEC [LABEL] makes (or completes) the venv DIR
# holding SPEC, this checkout installed editable with an extra (".[local]" for
# `make run`, ".[dev]" for the tests), one line per step with its time.
# PYTHON (default python3) makes a new venv; it must be Python >= 3.11.
set -euo pipefail
venv=$1 spec=$2 label=${3:-make}
python=${PYTHON:-python3}
started=$(date +%s)
step() { printf '%s: %s\n' "$label" "$*"; }
took() { printf '%s: ... %s s\n' "$label" "$(($(date +%s) - started))"; }

if ! test -x "$venv/bin/python"; then
  if ! command -v "$python" >/dev/null 2>&1; then
    echo "$label: no $python on PATH: edgeproxy needs Python >= 3.11 (make ... PYTHON=python3.12 names another)" >&2
    exit 1
  fi
  if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "$label: $python is Python $("$python" -c 'import platform; print(platform.python_version())'):" \
      "edgeproxy needs >= 3.11 (make ... PYTHON=python3.12 names another)" >&2
    exit 1
  fi
  step "creating $venv ($("$python" -c 'import platform; print(platform.python_version())'))"
  "$python" -m venv "$venv"
fi
step "updating pip in $venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
took
step "installing $spec into $venv (a first install takes a minute or more)"
# --quiet keeps pip's progress to this one line (a failure still prints its whole
# error); the filter, the box setuptools draws around its editable-install notice
# (pip >= 25 shows the build backend's warnings): this checkout is the package.
PYTHONWARNINGS="ignore:Editable installation" "$venv/bin/python" -m pip install --quiet -e "$spec"
took
