# Correct (unless __END__ says to hang or exit at import), but at import starts a plain child, a child in a new session and
# a double-forked daemon, all sleeping, and prints their pids as the host knows them (the test looks for them there; in
# the jail's PID namespace the pids this process sees are the namespace's).
import os
import subprocess


def host(pid):
    """pid's number on the host: the host's /proc lists the namespace's processes under it, NSpid ending in ours."""
    ns = os.readlink("/proc/self/ns/pid")
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if os.readlink("/proc/%s/ns/pid" % d) != ns:
                    continue
                with open("/proc/%s/status" % d) as f:
                    nspid = [ln.split()[1:] for ln in f if ln.startswith("NSpid:")][0]
                if nspid[-1] == str(pid):
                    return int(d)
            except (OSError, IndexError):
                pass
    return pid


import torch.nn as nn

pids = [subprocess.Popen(["sleep", "3600"]).pid,
        subprocess.Popen(["sleep", "3601"], start_new_session=True).pid]
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(w, b"%d\n" % os.getpid())
        os.execvp("sleep", ["sleep", "3602"])
    os._exit(0)
os.close(w)
pids.append(int(os.read(r, 64).decode().strip()))
print("SPAWNED", " ".join(str(host(p)) for p in pids), flush=True)
if "__END__" == "hang":
    import time
    time.sleep(3600)
elif "__END__" == "exit":
    os._exit(3)  # the child dies at once: what it started is the parent's to sweep


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.clamp_min(0.0)
