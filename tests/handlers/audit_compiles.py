"""Run by a bare python3.12 (``-I -S -B``): run a script, report what was compiled from source.

    python3.12 -I -S -B audit_compiles.py SCRIPT [ARGS ...]

Runs SCRIPT as ``__main__`` with ARGS and prints, last, ``COMPILED`` and a
JSON list of every ``.py`` file the import system compiled from source (the
``compile`` audit event, raised from importlib's ``source_to_code``): with
valid bytecode beside a module, importing it compiles nothing, so the list
names the modules that shipped without usable bytecode.
"""

import json
import runpy
import sys

compiled = []


def _hook(event, args):
    # Only the import system's compiles (importlib's source_to_code): a library that
    # parses a source into an AST (anyio reads its own) compiles no bytecode.
    if event == "compile" and isinstance(args[1], str) and args[1].endswith(".py"):
        callers = {sys._getframe(depth).f_code.co_name for depth in (1, 2)}
        if "source_to_code" in callers:
            compiled.append(args[1])


sys.addaudithook(_hook)
script, *rest = sys.argv[1:]
sys.argv = [script, *rest]
try:
    runpy.run_path(script, run_name="__main__")
finally:
    print("COMPILED " + json.dumps(compiled))
