"""The wire between the judge process and the candidate's process.

Messages are JSON, one per datagram of a SOCK_SEQPACKET socketpair, never
pickle: the judge decodes what the candidate's process sends, and
unpickling it would run the candidate's code in the judge. Tensors cross
by reference, never by value:

  CPU:  the storage lives in shared memory (torch's fd strategy); its file
        descriptor rides along the message (SCM_RIGHTS) and the receiver
        maps it. No copy beyond moving a fresh tensor into shared memory.
  CUDA: (CUDA_SHARING "vmm", NVIDIA) an allocation of the driver's
        virtual memory management that holds only the message's tensors
        (vmm.py), its file descriptor along the message as a CPU
        storage's; the receiver maps it. The judge's inputs are copied
        into one when they are made (isolated); anything else the encoder
        copies in (finish). (CUDA_SHARING "ipc": ROCm, and a driver that
        cannot export a descriptor) the storage's CUDA IPC handle (torch's
        own _share_cuda_ and _new_shared_cuda, the calls
        torch.multiprocessing's reductions make), its bytes
        base64-encoded in the JSON: it fails across a uid.

A value is encoded as a tree: {"t": i} names the i-th tensor of the
message's "tensors" list; {"seq": [...], "tuple": bool}, {"dict": [[k,
v], ...]}, {"v": scalar}, {"dtype": name}, {"device": name}; anything else
is {"repr": text}, which the judge compares as text and says so."""
import base64
import contextlib
import json
import os
import socket

import torch

from evaluate.judge import vmm

MAX_MSG = 4 << 20
MAX_FDS = 250

_DTYPES = {str(d).replace("torch.", ""): d for d in (
    torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.uint8, torch.bool, torch.complex64, torch.complex128)}
for _n in ("float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64"):
    if hasattr(torch, _n):
        _DTYPES[_n] = getattr(torch, _n)


# How CUDA tensors cross (module doc). The worker sets it once, before it
# forks any child (worker.py _gpu_sharing), so both sides of an exchange,
# forks of that parent, agree; each side decodes only its own kind.
CUDA_SHARING = "ipc" if torch.version.hip else "vmm"


class WireError(Exception):
    """A message that does not follow the protocol."""


def send(sock, msg, fds=()):
    data = json.dumps(msg).encode()
    if len(data) > MAX_MSG:
        raise WireError("message of %d bytes over %d" % (len(data), MAX_MSG))
    if fds:
        socket.send_fds(sock, [data], list(fds))
    else:
        sock.sendall(data)


def recv(sock):
    """(message, fds), or (None, []) when the other side closed."""
    data, fds, _flags, _addr = socket.recv_fds(sock, MAX_MSG, MAX_FDS)
    if not data:
        for fd in fds:
            os.close(fd)
        return None, []
    try:
        msg = json.loads(data)
    except ValueError as e:
        for fd in fds:
            os.close(fd)
        raise WireError("not JSON: %s" % e) from None
    if not isinstance(msg, dict):
        for fd in fds:
            os.close(fd)
        raise WireError("not an object")
    return msg, fds


# ---------------------------------------------------------------- encoding

class Encoder:
    """Encodes one value tree; tensors go into self.tensors (metadata) and
    self.fds (CPU storages). self.keep holds what must stay alive until
    the receiver is done (shared copies made for the wire)."""

    def __init__(self):
        self.tensors = []
        self.fds = []
        self.keep = []
        self._pending = []  # CUDA tensors no shared allocation holds yet, with their metadata (finish)
        self._fd_of = {}  # id(vmm.Mapping) -> its index in fds

    def enc(self, x):
        if isinstance(x, torch.Tensor):
            self.tensors.append(self._tensor(x))
            return {"t": len(self.tensors) - 1}
        if isinstance(x, (list, tuple)):
            return {"seq": [self.enc(v) for v in x], "tuple": isinstance(x, tuple)}
        if isinstance(x, dict) and all(isinstance(k, str) for k in x):
            return {"dict": [[k, self.enc(v)] for k, v in x.items()]}
        if x is None or isinstance(x, (bool, int, float, str)):
            return {"v": x}
        if isinstance(x, torch.dtype):
            return {"dtype": str(x).replace("torch.", "")}
        if isinstance(x, torch.device):
            return {"device": str(x)}
        return {"repr": repr(x)[:2000]}

    def _tensor(self, t):
        t = t.detach()
        meta = {"dtype": str(t.dtype).replace("torch.", ""), "size": list(t.shape), "stride": list(t.stride()),
                "offset": t.storage_offset(), "device": t.device.type}
        if t.numel() == 0:
            meta["empty"] = True
            return meta
        if t.device.type == "cpu":
            return self._cpu(t, meta)
        if t.device.type == "cuda":
            return self._cuda(t, meta)
        raise WireError("tensors on %s cannot cross processes" % t.device)

    def _cpu(self, t, meta):
        st = t.untyped_storage()
        if not st.is_shared():
            try:
                t.share_memory_()  # moves the storage into shared memory in place
            except RuntimeError:
                t = t.clone().share_memory_()
                meta["offset"], meta["stride"] = t.storage_offset(), list(t.stride())
            st = t.untyped_storage()
        self.keep.append(t)
        fd, size = st._share_fd_cpu_()
        meta["fd"] = len(self.fds)
        meta["nbytes"] = int(size)
        self.fds.append(fd)
        return meta

    def _cuda(self, t, meta):
        if CUDA_SHARING == "vmm":
            found = vmm.exported(t.untyped_storage().data_ptr())
            if found is None or found[1] != 0:
                self._pending.append((t, meta))  # finish() copies it in
                return meta
            self._vmm_meta(t, found[0], meta)
            return meta
        try:
            h = t.untyped_storage()._share_cuda_()
        except RuntimeError:
            # Memory torch's allocator did not make (or received by IPC
            # itself) cannot be shared again: a copy can.
            t = t.clone()
            meta["offset"], meta["stride"] = t.storage_offset(), list(t.stride())
            h = t.untyped_storage()._share_cuda_()
        self.keep.append(t)
        dev, handle, size, off, rc_handle, rc_off, ev_handle, ev_sync = h
        b = lambda v: None if v is None else base64.b64encode(bytes(v)).decode()  # noqa: E731
        meta["cuda"] = {"device": int(dev), "handle": b(handle), "nbytes": int(size), "storage_offset": int(off),
                        "rc_handle": b(rc_handle), "rc_offset": int(rc_off), "event": b(ev_handle), "event_sync": bool(ev_sync)}
        return meta

    def _vmm_meta(self, t, mapping, meta):
        """meta for t, whose storage is the whole of mapping (shared_copies)."""
        if id(mapping) not in self._fd_of:
            self._fd_of[id(mapping)] = len(self.fds)
            self.fds.append(mapping.fd)  # the Mapping's own: sending dups it
        self.keep.append(t)
        meta["offset"], meta["stride"] = t.storage_offset(), list(t.stride())
        meta["vmm"] = {"fd": self._fd_of[id(mapping)], "nbytes": mapping.nbytes}

    def finish(self):
        """Copies the CUDA tensors no shared allocation holds into one new
        allocation per device (shared_copies)."""
        if not self._pending:
            return
        by_device = {}
        for t, meta in self._pending:
            by_device.setdefault(t.device.index, []).append((t, meta))
        self._pending = []
        for idx, items in by_device.items():
            copies = shared_copies([t for t, _ in items], idx)
            for (_t, meta), c in zip(items, copies):
                self._vmm_meta(c, vmm.exported(c.untyped_storage().data_ptr())[0], meta)


# ---------------------------------------------------------------- decoding

class Decoder:
    """Rebuilds a value tree from a message; validates every field, since
    the judge decodes what the candidate's process sent."""

    def __init__(self, tensors, fds, device):
        if not isinstance(tensors, list) or len(tensors) > 10000:
            raise WireError("bad tensor list")
        self.meta = tensors
        self.fds = fds
        self.device = device
        self.made = {}
        self.mapped = {}  # descriptor index -> the uint8 tensor over its mapped allocation

    def close(self):
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = []

    def dec(self, x, depth=0):
        if depth > 50 or not isinstance(x, dict) or len(x) > 2:
            raise WireError("bad value node")
        if "t" in x:
            return self._tensor(_int(x["t"]))
        if "seq" in x:
            items = [self.dec(v, depth + 1) for v in _list(x["seq"])]
            return tuple(items) if x.get("tuple") else items
        if "dict" in x:
            return {str(k): self.dec(v, depth + 1) for k, v in _list(x["dict"])}
        if "v" in x:
            v = x["v"]
            if not (v is None or isinstance(v, (bool, int, float, str))):
                raise WireError("bad scalar")
            return v
        if "dtype" in x:
            return _dtype(x["dtype"])
        if "device" in x:
            return torch.device(str(x["device"]))
        if "repr" in x:
            return Repr(str(x["repr"]))
        raise WireError("unknown value node %s" % sorted(x)[:3])

    def _tensor(self, i):
        if i < 0 or i >= len(self.meta):
            raise WireError("tensor index out of range")
        if i in self.made:
            return self.made[i]
        m = self.meta[i]
        if not isinstance(m, dict):
            raise WireError("bad tensor metadata")
        dtype = _dtype(m.get("dtype"))
        size = [_int(v) for v in _list(m.get("size"))]
        stride = [_int(v) for v in _list(m.get("stride"))]
        offset = _int(m.get("offset"))
        if len(size) != len(stride) or len(size) > 64 or any(v < 0 for v in size + stride) or offset < 0:
            raise WireError("bad tensor geometry")
        kind = m.get("device")
        if m.get("empty"):
            dev = self.device if kind == self.device.type else torch.device(kind if kind in ("cpu", "cuda") else "cpu")
            t = torch.empty_strided(size, stride, dtype=dtype, device=dev)
        elif kind == "cpu":
            fi = _int(m.get("fd"))
            if fi < 0 or fi >= len(self.fds):
                raise WireError("tensor names a missing descriptor")
            st = torch.UntypedStorage._new_shared_fd_cpu(self.fds[fi], _int(m.get("nbytes")))
            t = torch.empty(0, dtype=dtype).set_(st, offset, size, stride)  # torch checks the bounds
        elif kind == "cuda" and self.device.type == "cuda" and CUDA_SHARING == "vmm":
            t = self._vmm_tensor(m.get("vmm"), dtype, size, stride, offset)
        elif kind == "cuda" and self.device.type == "cuda":
            t = _cuda_tensor(m.get("cuda"), dtype, size, stride, offset)
        else:
            raise WireError("a %s tensor cannot be received here (%s)" % (kind, self.device))
        self.made[i] = t
        return t

    def _vmm_tensor(self, v, dtype, size, stride, offset):
        """A tensor in an allocation the sender shared by descriptor,
        mapped once per message; its extent checked against what the
        sender says the allocation holds (and that against the driver)."""
        if not isinstance(v, dict):
            raise WireError("bad shared CUDA allocation")
        fi, nbytes = _int(v.get("fd")), _int(v.get("nbytes"))
        if fi < 0 or fi >= len(self.fds):
            raise WireError("tensor names a missing descriptor")
        base = self.mapped.get(fi)
        if base is None:
            idx = self.device.index if self.device.index is not None else torch.cuda.current_device()
            try:
                base = self.mapped[fi] = vmm.attach(self.fds[fi], nbytes, idx).bytes()
            except vmm.VmmError as e:
                raise WireError("the shared CUDA allocation cannot be mapped: %s" % e) from None
        if base.numel() != nbytes:
            raise WireError("one allocation named with two sizes")
        es = dtype.itemsize
        if (offset + _extent(size, stride)) * es > nbytes:
            raise WireError("tensor reaches past its shared allocation")
        return torch.empty(0, dtype=dtype, device=base.device).set_(base.untyped_storage(), offset, size, stride)


def _extent(size, stride):
    """Elements from a tensor's first to one past its last (0 when empty)."""
    if any(n == 0 for n in size):
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(size, stride))


def shared_copies(tensors, device_index):
    """Copies of CUDA tensors (each laid out as empty_like would), in one
    new allocation that holds nothing else and that this process can send
    (vmm.allocate), each at a multiple of vmm.ALIGN bytes; done when this
    returns, since the receiver reads them from another process, on no
    stream of this one."""
    layout, at = [], 0
    for x in tensors:
        stride = torch.empty_like(x, device="meta").stride()
        layout.append((at, stride))
        at += (_extent(x.shape, stride) * x.element_size() + vmm.ALIGN - 1) // vmm.ALIGN * vmm.ALIGN
    try:
        base = vmm.allocate(max(at, 1), device_index).bytes()
    except vmm.VmmError as e:
        raise WireError("no shared CUDA allocation: %s" % e) from None
    st = base.untyped_storage()
    out = []
    for x, (at, stride) in zip(tensors, layout):
        c = torch.empty(0, dtype=x.dtype, device=base.device).set_(st, at // x.element_size(), x.shape, stride)
        c.copy_(x.detach())
        out.append(c)
    torch.cuda.synchronize(base.device)
    return out


class Repr:
    """A value that crossed as its repr() (not a tensor, scalar or dtype)."""

    def __init__(self, text):
        self.text = text

    def __eq__(self, other):
        return isinstance(other, Repr) and other.text == self.text

    def __repr__(self):
        return self.text


def _cuda_tensor(c, dtype, size, stride, offset):
    from torch.multiprocessing.reductions import rebuild_cuda_tensor
    if not isinstance(c, dict):
        raise WireError("bad CUDA share")
    u = lambda v: None if v is None else base64.b64decode(str(v))  # noqa: E731
    return rebuild_cuda_tensor(torch.Tensor, torch.Size(size), tuple(stride), offset, torch.UntypedStorage, dtype,
                               _int(c.get("device")), u(c.get("handle")), _int(c.get("nbytes")), _int(c.get("storage_offset")),
                               False, u(c.get("rc_handle")), _int(c.get("rc_offset")), u(c.get("event")), bool(c.get("event_sync")))


def _int(v):
    if not isinstance(v, int) or isinstance(v, bool) or abs(v) > (1 << 62):
        raise WireError("not an integer: %r" % (v,))
    return v


def _list(v):
    if not isinstance(v, list) or len(v) > 100000:
        raise WireError("not a list")
    return v


def _dtype(name):
    d = _DTYPES.get(str(name))
    if d is None:
        raise WireError("unknown dtype %r" % (name,))
    return d


# ------------------------------------------------------------ what is shared

# (CUDA_SHARING "ipc") CUDA IPC shares a whole allocation of torch's
# caching allocator (a segment of up to 20 MB), not the tensor: the
# receiver maps every block in it. A judge tensor shared from its default
# pool would hand the candidate's process the blocks beside it, the
# reference's outputs among them, to read or overwrite before the compare.
# What the judge shares comes from a pool that holds nothing else (one per
# device, kept for the judge's life). ("vmm": an allocation per message.)
_SHARED_POOLS = {}


@contextlib.contextmanager
def shared_memory(device):
    """Allocations made inside go to the judge's shared pool on a CUDA
    device (and where they always go on the CPU: a storage moved into
    shared memory is its own file)."""
    if device.type != "cuda":
        yield
        return
    if CUDA_SHARING == "vmm":
        # A CUDA tensor made here would not be shared in place: the
        # encoder copies it into an allocation of its own (finish).
        raise WireError("CUDA tensors are shared in place only by torch's IPC; here they are copied (isolated)")
    idx = device.index if device.index is not None else torch.cuda.current_device()
    pool = _SHARED_POOLS.get(idx) or _SHARED_POOLS.setdefault(idx, torch.cuda.MemPool())
    with torch.cuda.use_mem_pool(pool, device=idx):
        yield


def isolated(value, device):
    """value with each CUDA tensor copied into memory that holds nothing
    else of the judge's (a tensor passed twice stays one tensor), for the
    judge to share; other leaves as they are."""
    if device.type != "cuda":
        return value
    if CUDA_SHARING == "vmm":
        return _isolated_vmm(value, device)
    made = {}

    def leaf(x):
        if x.device.type != "cuda":
            return None
        if id(x) not in made:
            made[id(x)] = (x, x.detach().clone())  # x kept: its id is not reused while walking
        return made[id(x)][1]

    with shared_memory(device):
        return _walk(value, leaf)


def _isolated_vmm(value, device):
    """isolated(), each tensor's copy in one new shared allocation per
    device (shared_copies): what the candidate's process maps is this
    call's inputs and nothing else."""
    found = {}
    _walk(value, lambda x: found.setdefault(id(x), x) if x.device.type == "cuda" else None)
    by_device = {}
    for x in found.values():
        by_device.setdefault(x.device.index if x.device.index is not None else device.index, []).append(x)
    copy = {}
    for idx, xs in by_device.items():
        copy.update(zip(map(id, xs), shared_copies(xs, idx)))
    return _walk(value, lambda x: copy.get(id(x), x))


def _walk(x, leaf):
    """x with every tensor t replaced by leaf(t) (or kept where leaf
    returns None), through tuples, lists and dicts."""
    if isinstance(x, torch.Tensor):
        r = leaf(x)
        return x if r is None else r
    if isinstance(x, tuple):  # the wire sends a sequence and whether it was a tuple
        return tuple(_walk(v, leaf) for v in x)
    if isinstance(x, list):
        return [_walk(v, leaf) for v in x]
    if isinstance(x, dict):
        return {k: _walk(v, leaf) for k, v in x.items()}
    return x


def encode(value):
    """(tree, encoder) for value; send encoder.tensors and encoder.fds with the tree."""
    e = Encoder()
    tree = e.enc(value)
    e.finish()
    return tree, e
