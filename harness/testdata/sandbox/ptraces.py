# Correct, but tries to attach to, read and write its parent (the warm
# worker) through ptrace, process_vm_readv/writev and /proc/PID/mem, to
# stop it with a signal, and to reach the server's port on the loopback.
import ctypes
import os
import socket

import torch.nn as nn

libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.restype = ctypes.c_long
# The parent as the host's /proc names it: in the jail's PID namespace
# os.getppid() is 0, yet a candidate that read the harness's code would
# take the number from /proc/self/stat (the host's procfs) instead.
with open("/proc/self/stat", "rb") as f:
    _stat = f.read()
ppid = int(_stat[_stat.rfind(b")") + 2:].split()[1]) or os.getppid()
# In the jail the parent is outside this process's namespace: no number
# names it (0 would signal this process's own group).


class IOVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


buf = ctypes.create_string_buffer(8)
local = IOVec(ctypes.cast(buf, ctypes.c_void_p), 8)
remote = IOVec(ctypes.c_void_p(0x400000), 8)
r = libc.ptrace(16, ppid, 0, 0)  # PTRACE_ATTACH
print("PTRACE", r, ctypes.get_errno(), flush=True)
r = libc.process_vm_readv(ppid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
print("VM_READV", r, ctypes.get_errno(), flush=True)
r = libc.process_vm_writev(ppid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
print("VM_WRITEV", r, ctypes.get_errno(), flush=True)
try:
    with open("/proc/%d/mem" % ppid, "r+b") as f:
        print("PROC_MEM opened", flush=True)
except OSError as e:
    print("PROC_MEM refused", e.errno, flush=True)
try:
    if ppid <= 0:
        raise ProcessLookupError(3, "the parent is outside this PID namespace")
    os.kill(ppid, 19)  # SIGSTOP: signals are scoped to the job's processes
    print("SIGNAL sent", flush=True)
    os.kill(ppid, 18)
except OSError as e:
    print("SIGNAL refused", e.errno, flush=True)

try:
    socket.create_connection(("127.0.0.1", __PORT__), timeout=5).close()
    print("NET connected", flush=True)
except OSError as e:
    print("NET refused", e.errno, flush=True)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.clamp_min(0.0)
