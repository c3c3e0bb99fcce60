#!/bin/sh
# A scripted agent that gives up with a non-zero exit.
cat >/dev/null
echo "reading kernel.py"
echo "error: model quota exhausted" >&2
exit 3
