#!/bin/sh
# A scripted agent that drops the normalization: the kernel builds and runs
# but its result is wrong.
cat >/dev/null
sed -i 's/yr\[j\] = xr\[j\] \* inv \* w\[j\];/yr[j] = xr[j] * w[j];/' kernel.py
echo '{"tokens": 500, "notes": "dropped the rsqrt (wrong on purpose)"}'
