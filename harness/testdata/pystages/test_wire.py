"""CUDA tensors across the wire by descriptor (evaluate.judge.wire with
CUDA_SHARING "vmm", evaluate.judge.vmm) between this process, as the judge,
and a forked child jailed as a GPU job's candidate is: pid 1 of a PID
namespace of its own with its own /proc, and uid 65534. Torch's CUDA IPC
failed across that uid; this exchange must not. Also what a hostile sender
can put in a message (a size the allocation does not have, a tensor past
its allocation, a descriptor that is no CUDA memory, torch's IPC handle),
each refused with a WireError, and that the memory is let go.

Needs a CUDA device and root (the child's namespaces and uid drop):
KEVOLVE_WIRE_GPU=1 (harness/stages_test.go's GPU test) makes a missing
one a failure; elsewhere the module skips."""
import ctypes
import faulthandler
import gc
import json
import os
import socket
import time
import unittest

import torch

from evaluate.judge import vmm
from evaluate.judge import wire
from sandbox import layers

STRICT = os.environ.get("KEVOLVE_WIRE_GPU") == "1"
# A hang here (a socket whose peer never sees EOF) ends in tracebacks, not
# in the Go test's deadline with nothing printed. Armed after the children
# are forked, and by each child for itself: a child forked with it armed
# has no watchdog thread, and arming (or cancelling) there waits forever.
HANG_S = int(os.environ.get("KEVOLVE_WIRE_HANG_S") or 120)
CLONE_NEWNS, CLONE_NEWPID = 0x00020000, 0x20000000
NOBODY = 65534


def _usable():
    return os.geteuid() == 0 and layers.gpu_sharing()[0] == "vmm"


USABLE = _usable()


def _jail():
    """Into a PID namespace (its first process, with its own /proc), then
    uid 65534, as a GPU job's candidate runs."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]
    if libc.unshare(CLONE_NEWNS | CLONE_NEWPID) != 0:
        raise OSError(ctypes.get_errno(), "unshare")
    pid = os.fork()
    if pid:
        os.waitpid(pid, 0)
        os._exit(0)
    libc.mount(None, b"/", None, 16384 | (1 << 18), None)  # MS_REC | MS_PRIVATE
    libc.mount(b"proc", b"/proc", b"proc", 2 | 4 | 8, None)
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def _child(sock, jailed):
    """The candidate's side, forked before this process touched CUDA
    (jailed: _jail); answers each message with the inputs' ReLU and a few
    more outputs, and reports what it saw. A message's "sharing" is how
    its tensors cross (torch's IPC only for the child that is not jailed)."""
    if jailed:
        try:
            _jail()
        except OSError as e:
            wire.send(sock, {"fatal": repr(e)})
            os._exit(1)
    if STRICT:
        faulthandler.dump_traceback_later(HANG_S, exit=True)  # after the namespaces: a thread would bar them
    dev = torch.device("cuda", 0)
    try:
        torch.zeros(1, device=dev)
        while True:
            msg, fds = wire.recv(sock)
            if msg is None:
                break
            wire.CUDA_SHARING = msg.get("sharing", "vmm")
            dec = wire.Decoder(msg.get("tensors"), list(fds), dev)
            try:
                x, y = dec.dec(msg.get("inputs"))
                base, size = ctypes.c_uint64(), ctypes.c_size_t()
                ctypes.CDLL("libcuda.so.1").cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size),
                                                                   ctypes.c_uint64(x.data_ptr()))
                seen = {"pid": os.getpid(), "uid": os.getuid(), "x_sum": float(x.double().sum()),
                        "same_tensor": x.data_ptr() == y.data_ptr(),
                        "mapped_bytes": int(size.value)}
                x.add_(1)  # written back where the judge sees it
                out = (x.relu(), x.t(), x.sum(), x > 0, x.to(torch.bfloat16), [x[1:3]])
                tree, enc = wire.encode(out)
                wire.send(sock, {"seen": seen, "outputs": tree, "tensors": enc.tensors}, enc.fds)
                wire.recv(sock)  # the judge has read them: enc may go
                del enc
            finally:
                dec.close()
    except BaseException as e:  # noqa: BLE001 - reported to the test
        wire.send(sock, {"fatal": repr(e)[:500]})
    os._exit(0)


_OUR_ENDS = []  # this side's sockets: a child forked later must not hold one (its peer would never see EOF)


def _start_child(jailed):
    """A child and this side's socket, forked at import: before any test
    here touches CUDA (a child forked after cannot use it)."""
    sock, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.fork()
    if pid == 0:
        for s in _OUR_ENDS + [sock]:
            s.close()
        _child(child, jailed)
    child.close()
    _OUR_ENDS.append(sock)
    return sock, pid


CHILD = _start_child(True) if USABLE else None
PLAIN_CHILD = _start_child(False) if USABLE else None  # for torch's IPC, which the jail defeats
if STRICT:
    faulthandler.dump_traceback_later(HANG_S, exit=True)


@unittest.skipUnless(USABLE or STRICT, "a CUDA device with descriptor export and root (KEVOLVE_WIRE_GPU=1)")
class JailedExchange(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not USABLE:
            raise AssertionError("KEVOLVE_WIRE_GPU=1 but no CUDA device with descriptor export (or not root)")
        cls.sock, cls.pid = CHILD
        cls.dev = torch.device("cuda", 0)
        wire.CUDA_SHARING = "vmm"

    @classmethod
    def tearDownClass(cls):
        for sock in _OUR_ENDS:
            sock.close()
        for _sock, pid in (CHILD, PLAIN_CHILD):
            os.waitpid(pid, 0)

    def exchange(self, x, sock=None):
        sock = sock or self.sock
        tree, enc = wire.encode(wire.isolated((x, x), self.dev))
        wire.send(sock, {"inputs": tree, "tensors": enc.tensors, "sharing": wire.CUDA_SHARING}, enc.fds)
        rep, fds = wire.recv(sock)
        self.assertNotIn("fatal", rep, rep)
        dec = wire.Decoder(rep["tensors"], fds, self.dev)
        try:
            return rep["seen"], dec.dec(rep["outputs"]), enc
        finally:
            dec.close()

    def test_both_ways_across_pid_namespace_and_uid(self):
        x = torch.randn(64, 48, device=self.dev)
        seen, out, enc = self.exchange(x)
        self.assertEqual((seen["pid"], seen["uid"]), (1, NOBODY), seen)
        self.assertAlmostEqual(seen["x_sum"], float(x.double().sum()), places=3)
        self.assertTrue(seen["same_tensor"], "a tensor passed twice crossed as two")
        # What the candidate's process maps is one allocation of the
        # granularity's size holding this message's inputs alone.
        self.assertEqual(seen["mapped_bytes"], vmm.granularity(0))
        shared = enc.keep[0]
        self.assertTrue(torch.equal(shared, x + 1), "the child's write did not reach the judge's copy")
        relu, xt, total, pos, bf, (rows,) = out
        x1 = x + 1
        self.assertTrue(torch.equal(relu, x1.relu()))
        self.assertTrue(torch.equal(xt, x1.t()))
        self.assertEqual(xt.stride(), x1.t().stride(), "a transposed output lost its layout")
        self.assertAlmostEqual(float(total), float(x1.sum()), places=2)
        self.assertTrue(torch.equal(pos, x1 > 0))
        self.assertTrue(torch.equal(bf, x1.to(torch.bfloat16)))
        self.assertTrue(torch.equal(rows, x1[1:3]))
        del out, relu, xt, total, pos, bf, rows
        wire.send(self.sock, {"op": "done"})

    def test_memory_is_let_go(self):
        x = torch.randn(1 << 20, device=self.dev)
        for _ in range(3):
            seen, out, enc = self.exchange(x)
            del seen, out, enc
            wire.send(self.sock, {"op": "done"})
        gc.collect()
        self.assertEqual(vmm._EXPORTED, {}, "shared allocations outlived every tensor over them")

    def test_decoded_tensor_outlives_its_decoder(self):
        """torch holds the Mapping a tensor was made over: the tensor stays
        readable with nothing else left holding it."""
        x = torch.arange(4096, dtype=torch.float32, device=self.dev)
        _seen, out, enc = self.exchange(x)
        relu = out[0]
        del out, _seen
        gc.collect()
        torch.cuda.synchronize()
        self.assertTrue(torch.equal(relu, (x + 1).relu()))
        del enc
        wire.send(self.sock, {"op": "done"})

    def test_per_message_cost(self):
        """Prints what a message's sharing costs (for the closing note):
        by descriptor to the jailed child, and by torch's IPC to one that
        is not jailed, the same message."""
        x = torch.randn(1 << 20, device=self.dev)
        cost = {}
        for sharing, sock in (("vmm", self.sock), ("ipc", PLAIN_CHILD[0]), ("vmm", self.sock)):
            wire.CUDA_SHARING = sharing
            try:
                runs = []
                for _ in range(21):
                    t0 = time.perf_counter()
                    _seen, out, enc = self.exchange(x, sock)
                    del out, enc
                    gc.collect()  # what a message leaves is let go inside its time
                    runs.append(time.perf_counter() - t0)
                    wire.send(sock, {"op": "done"})
            finally:
                wire.CUDA_SHARING = "vmm"
            cost[sharing] = sorted(runs)[10]
        print("\nwire round trip, 4 MiB in and 6 outputs back, median of 21: by descriptor (jailed child) %.3f ms, "
              "by torch's IPC (child not jailed) %.3f ms" % (cost["vmm"] * 1e3, cost["ipc"] * 1e3))


@unittest.skipUnless(USABLE or STRICT, "a CUDA device with descriptor export (KEVOLVE_WIRE_GPU=1)")
class HostileMessages(unittest.TestCase):
    """What the judge decodes comes from the candidate's process: every
    field that names memory is checked, and a bad one is a WireError."""

    @classmethod
    def setUpClass(cls):
        if not USABLE:
            raise AssertionError("KEVOLVE_WIRE_GPU=1 but no CUDA device with descriptor export")
        cls.dev = torch.device("cuda", 0)
        wire.CUDA_SHARING = "vmm"

    def message(self):
        x = torch.randn(1000, device=self.dev)
        tree, enc = wire.encode((x,))
        return json.loads(json.dumps(enc.tensors)), enc

    def decode(self, tensors, fds):
        dec = wire.Decoder(tensors, fds, self.dev)
        return dec.dec({"t": 0})

    def test_honest_message_decodes(self):
        tensors, enc = self.message()
        self.assertEqual(self.decode(tensors, enc.fds).shape, (1000,))

    def test_refused(self):
        g = vmm.granularity(0)
        r, w = os.pipe()
        self.addCleanup(os.close, r)
        self.addCleanup(os.close, w)
        cases = {
            "size the allocation does not have": lambda m: m["vmm"].update(nbytes=2 * g),
            "size off the granularity": lambda m: m["vmm"].update(nbytes=g - 512),
            "tensor past its allocation": lambda m: m.update(offset=g // 4 - 10),
            "stride past its allocation": lambda m: m.update(stride=[g]),
            "missing descriptor": lambda m: m["vmm"].update(fd=5),
            "torch's IPC handle": lambda m: m.update(cuda=m.pop("vmm")),
            "no CUDA memory behind the descriptor": "pipe",
        }
        for name, change in cases.items():
            with self.subTest(name):
                tensors, enc = self.message()
                fds = list(enc.fds)
                if change == "pipe":
                    fds = [r]
                else:
                    change(tensors[0])
                with self.assertRaises(wire.WireError):
                    self.decode(tensors, fds)


if __name__ == "__main__":
    unittest.main()
