#!/bin/sh
# A scripted agent that exits 0 without touching kernel.py.
cat >/dev/null
echo "looks good to me"
