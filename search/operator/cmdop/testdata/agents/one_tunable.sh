#!/bin/sh
# A scripted agent that changes one tunable of its parent and nothing else.
set -e
cat >/dev/null
sed -i -e 's/^THREADS = 0 /THREADS = 1 /' kernel.py
grep -q '^THREADS = 1 ' kernel.py || { echo "pattern not found" >&2; exit 9; }
echo '{"input_tokens": 700, "output_tokens": 20, "notes": "one thread"}'
