"""A json-protocol Agent tool: which calc functions do the tests call?

Reads one request on stdin, prints one result object on stdout.
"""

import ast
import json
import pathlib
import sys

request = json.load(sys.stdin)
tests_dir = pathlib.Path(sys.argv[1])
wanted = request["args"].get("function")
called = set()
for path in sorted(tests_dir.glob("test_*.py")):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            called.add(node.func.id)
if wanted is not None:
    result = {"content": [{"type": "json", "data": {"function": wanted, "called": wanted in called}}]}
else:
    result = {"content": [{"type": "json", "data": {"called": sorted(called)}}]}
json.dump(result, sys.stdout)
