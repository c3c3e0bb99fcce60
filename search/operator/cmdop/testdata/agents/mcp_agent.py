#!/usr/bin/env python3
"""A scripted agent that checks its kernel through the kevolve MCP server
named in KEVOLVE_MCP_CONFIG before it finishes, as Claude Code or Codex
would: it starts the server over stdio, initializes, calls run_kernel on
kernel.py against reference.py, records the answer, then edits kernel.py and
reports the verdict it saw in its notes. Standard library only."""
import json, os, subprocess, sys

sys.stdin.read()
cfg = json.load(open(os.environ["KEVOLVE_MCP_CONFIG"]))["mcpServers"]["kevolve"]
srv = subprocess.Popen([cfg["command"], *cfg["args"]], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def rpc(i, method, params):
    srv.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
    srv.stdin.flush()
    while True:
        line = srv.stdout.readline()
        if not line:
            sys.exit("server closed its stdout")
        msg = json.loads(line)
        if msg.get("id") == i:
            return msg


rpc(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                      "clientInfo": {"name": "scripted-agent", "version": "1"}})
srv.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
srv.stdin.flush()
wd = os.getcwd()
ans = rpc(2, "tools/call", {"name": "run_kernel", "arguments": {
    "reference": os.path.join(wd, "reference.py"), "candidate": os.path.join(wd, "kernel.py"),
    "target": "cpu", "shapes": "small", "skip_timing": True, "trials": 1}})
srv.stdin.close()
srv.wait(timeout=30)
json.dump(ans, open("run_kernel.json", "w"))
res = ans.get("result", {})
verdict = (res.get("structuredContent") or {}).get("verdict", "unknown")
if res.get("isError"):
    sys.exit("run_kernel failed: " + json.dumps(res)[:500])
src = open("kernel.py").read()
open("kernel.py", "w").write(src.replace('SCHEDULE = "static"', 'SCHEDULE = "guided"'))
print(json.dumps({"tokens": 10, "notes": "run_kernel said " + verdict + "; guided schedule"}))
