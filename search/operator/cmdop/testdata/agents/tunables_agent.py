#!/usr/bin/env python3
"""A scripted agent for any kernel with TUNABLES: it follows the cmd:
contract like a model would (reads the context on stdin, edits kernel.py,
reports its notes), changing one tunable to another listed value, chosen
from KEVOLVE_NODE so reruns are repeatable. Standard library only."""
import ast, json, os, random, re, sys

sys.stdin.read()
src = open("kernel.py").read()
m = re.search(r"^TUNABLES\s*=\s*(\{.*?\})\s*$", src, re.M | re.S)
if not m:
    sys.exit("kernel.py has no TUNABLES")
tunables = ast.literal_eval(m.group(1))
rng = random.Random(int(os.environ.get("KEVOLVE_NODE", "0")) * 7919 + int(os.environ.get("KEVOLVE_PARENT", "0")))
knobs = list(tunables)
rng.shuffle(knobs)
for name in knobs:
    cur = re.search(rf"^{name}\s*=\s*(.+?)(\s*#.*)?$", src, re.M)
    if not cur:
        continue
    try:
        now = ast.literal_eval(cur.group(1))
    except Exception:
        continue
    others = [v for v in tunables[name] if v != now]
    if not others:
        continue
    new = rng.choice(others)
    src = src[:cur.start(1)] + repr(new) + src[cur.end(1):]
    open("kernel.py", "w").write(src)
    print(json.dumps({"tokens": 0, "notes": f"{name}: {now!r} -> {new!r}"}))
    sys.exit(0)
sys.exit("no tunable could change")
