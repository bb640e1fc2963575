#!/bin/sh
# Prints the path of a working python3.12 (the Lambda runtime's version), found the
# way the tests find it (tests/handlers/artifact.py lambda_python): python3.12 on
# PATH if it runs, else the first of pyenv's 3.12.* versions that runs (a pyenv
# shim whose version is not active does not run). Exits 1 with one line otherwise.
version=3.12
runs() { [ -n "$1" ] && [ -x "$1" ] && "$1" -c pass >/dev/null 2>&1; }
found=$(command -v "python$version" 2>/dev/null)
if runs "$found"; then echo "$found"; exit 0; fi
for dir in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$version".*; do
  if runs "$dir/bin/python$version"; then echo "$dir/bin/python$version"; exit 0; fi
done
echo "no working python$version (the Lambda runtime's version): put python$version on PATH, or pyenv install $version" >&2
exit 1
