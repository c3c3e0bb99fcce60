#!/bin/sh
# A scripted agent that never finishes, with a grandchild of its own: the
# deadline must kill both.
sleep 600 &
echo $! > grandchild.pid
echo "working on it"
sleep 600
