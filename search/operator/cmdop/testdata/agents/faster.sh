#!/bin/sh
# A scripted agent that follows the cmd: contract and writes a correct,
# leaner kernel: a float accumulator instead of a double one (within the
# fp32 tolerance). It checks what the contract promises first.
set -e
prompt=$(cat)                                   # the context on stdin
[ "$prompt" = "$(cat PROMPT.md)" ] || { echo "stdin differs from PROMPT.md" >&2; exit 9; }
for v in KEVOLVE_RUN KEVOLVE_PARENT KEVOLVE_NODE KEVOLVE_MCP_CONFIG KEVOLVE_WORKDIR; do
  eval "val=\${$v:-}"; [ -n "$val" ] || { echo "$v not set" >&2; exit 9; }
done
[ -f reference.py ] && [ -f "$KEVOLVE_MCP_CONFIG" ] || { echo "missing files" >&2; exit 9; }
sed -i -e 's/double acc = 0.0;/float acc = 0.0f;/' \
       -e 's/acc += (double)xr\[j\] \* xr\[j\];/acc += xr[j] * xr[j];/' \
       -e 's|(float)(acc / (double)cols)|(acc / (float)cols)|' kernel.py
grep -q 'float acc = 0.0f' kernel.py || { echo "pattern not found" >&2; exit 9; }
echo "thinking done"
echo '{"input_tokens": 1200, "output_tokens": 340, "cost_usd": 0.004, "notes": "float accumulator"}'
