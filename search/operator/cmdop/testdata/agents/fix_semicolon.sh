#!/bin/sh
# A scripted agent that fixes the one-line bug of its parent: the missing
# semicolon after the accumulator's declaration (issue 20: this fix was
# rejected as a near-duplicate of the failed parent).
set -e
cat >/dev/null
grep -q 'double acc = 0.0$' kernel.py || { echo "no bug to fix" >&2; exit 9; }
sed -i -e 's/double acc = 0\.0$/double acc = 0.0;/' kernel.py
echo '{"input_tokens": 900, "output_tokens": 40, "notes": "added the missing semicolon"}'
