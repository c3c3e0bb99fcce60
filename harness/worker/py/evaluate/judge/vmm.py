"""CUDA memory two processes share by file descriptor: an allocation of the
driver's virtual memory management (cuMemCreate) exported as a POSIX file
descriptor, which rides a wire message (SCM_RIGHTS) like a CPU storage's,
and is imported and mapped on the other side.

Why not torch's CUDA IPC (cudaIpcGetMemHandle, what _share_cuda_ makes):
on an H200 (driver 580, 2026-11-28) opening such a handle failed with
cudaErrorMapBufferObjectFailed whenever the two processes had different
uids, so a GPU job's candidate had to keep the server's uid. A descriptor
is a capability the kernel hands over: the same exchange worked both ways
between root and uid 65534, in and out of a PID namespace of its own
(harness/testdata/pystages/test_wire.py, where a GPU is).

Each shared allocation holds only what one message carries, so the
receiver can reach nothing of the sender's beside it. Every call here
raises VmmError with the driver's reason; nothing here runs without a
CUDA device. Whether a host's device can export a descriptor is asked
without torch, and without CUDA in the asking process, by
sandbox.layers.gpu_sharing."""
import ctypes
import os
import threading
import weakref

import torch

CU_MEM_ALLOCATION_TYPE_PINNED = 1
CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1
CU_MEM_LOCATION_TYPE_DEVICE = 1
CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3
# Where tensors start inside one allocation: every dtype's alignment, and
# what CUDA kernels expect of a fresh allocation's vector loads.
ALIGN = 512


class VmmError(Exception):
    """A driver call of the exchange failed (its CUresult and name)."""


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _Prop(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", _Location),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", _AllocFlags)]


class _Access(ctypes.Structure):
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


_LIB = None
_GRANULARITY = {}
# Guards _EXPORTED. Reentrant: a Mapping collected while this thread holds
# it (the collector runs anywhere) takes it again to leave the table.
_LOCK = threading.RLock()


def _cu():
    global _LIB
    if _LIB is None:
        lib = ctypes.CDLL("libcuda.so.1")
        u64, sz = ctypes.c_ulonglong, ctypes.c_size_t
        for name, args in (("cuMemGetAllocationGranularity", [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]),
                           ("cuMemCreate", [ctypes.c_void_p, sz, ctypes.c_void_p, u64]),
                           ("cuMemExportToShareableHandle", [ctypes.c_void_p, u64, ctypes.c_int, u64]),
                           ("cuMemImportFromShareableHandle", [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]),
                           ("cuMemAddressReserve", [ctypes.c_void_p, sz, sz, u64, u64]),
                           ("cuMemMap", [u64, sz, sz, u64, u64]),
                           ("cuMemSetAccess", [u64, sz, ctypes.c_void_p, sz]),
                           ("cuMemUnmap", [u64, sz]),
                           ("cuMemAddressFree", [u64, sz]),
                           ("cuMemRelease", [u64]),
                           ("cuGetErrorName", [ctypes.c_int, ctypes.c_void_p])):
            f = getattr(lib, name)
            f.argtypes, f.restype = args, ctypes.c_int
        _LIB = lib
    return _LIB


def _check(r, what):
    if r != 0:
        name = ctypes.c_char_p()
        _cu().cuGetErrorName(r, ctypes.byref(name))
        raise VmmError("%s failed: %s (%d)" % (what, (name.value or b"?").decode(), r))


def _prop(device):
    p = _Prop()
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED
    p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    p.location = _Location(CU_MEM_LOCATION_TYPE_DEVICE, device)
    return p


def granularity(device):
    """The size every allocation on device is a multiple of (2 MiB on
    Hopper)."""
    g = _GRANULARITY.get(device)
    if g is None:
        v = ctypes.c_size_t()
        _check(_cu().cuMemGetAllocationGranularity(ctypes.byref(v), ctypes.byref(_prop(device)), 0),
               "cuMemGetAllocationGranularity")
        g = _GRANULARITY[device] = int(v.value)
    return g


class Mapping:
    """One allocation mapped read-write into this process on one device:
    ptr, nbytes, device, and fd where this process made it (the descriptor
    it sends; None for one it imported). Unmapped and released when the
    last tensor over it is gone (torch holds the object a tensor was made
    from by __cuda_array_interface__), after the device has finished with
    it; the other process's mapping keeps the memory until it lets go too."""

    def __init__(self, handle, nbytes, device, fd=None):
        # Until the mapping is made, handle and fd stay the caller's to
        # release (close() must not release them a second time).
        self.handle, self.fd, self.ptr = 0, None, 0
        self.nbytes, self.device = nbytes, device
        ptr = ctypes.c_ulonglong()
        lib = _cu()
        _check(lib.cuMemAddressReserve(ctypes.byref(ptr), nbytes, 0, 0, 0), "cuMemAddressReserve")
        try:
            _check(lib.cuMemMap(ptr.value, nbytes, 0, handle, 0), "cuMemMap")
            try:
                access = _Access(_Location(CU_MEM_LOCATION_TYPE_DEVICE, device), CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
                _check(lib.cuMemSetAccess(ptr.value, nbytes, ctypes.byref(access), 1), "cuMemSetAccess")
            except VmmError:
                lib.cuMemUnmap(ptr.value, nbytes)
                raise
        except VmmError:
            lib.cuMemAddressFree(ptr.value, nbytes)
            raise
        self.ptr, self.handle, self.fd = ptr.value, handle, fd
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (self.ptr, False),
                                         "strides": None, "version": 2}
        if fd is not None:
            with _LOCK:
                _EXPORTED[self.ptr] = self

    def bytes(self):
        """The whole allocation as a uint8 tensor (no copy)."""
        return torch.as_tensor(self, device=torch.device("cuda", self.device))

    def close(self):
        lib, ptr = _cu(), self.ptr
        if ptr:
            self.ptr = 0
            with _LOCK:
                _EXPORTED.pop(ptr, None)
            try:
                torch.cuda.synchronize(self.device)  # no kernel of ours may still use it
            except Exception:  # noqa: BLE001 - a faulted context: unmapping is still right
                pass
            lib.cuMemUnmap(ptr, self.nbytes)
            lib.cuMemAddressFree(ptr, self.nbytes)
        if self.handle:
            lib.cuMemRelease(self.handle)
            self.handle = 0
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - at interpreter exit the driver may be gone
            pass


# The allocations this process made and may send: base pointer -> Mapping.
# Weak: a Mapping is closed (and leaves) when no tensor holds it any more.
_EXPORTED = weakref.WeakValueDictionary()


def allocate(nbytes, device):
    """A new allocation of at least nbytes on device, mapped here, with
    the descriptor to send."""
    g = granularity(device)
    size = max(g, (int(nbytes) + g - 1) // g * g)
    handle = ctypes.c_ulonglong()
    lib = _cu()
    _check(lib.cuMemCreate(ctypes.byref(handle), size, ctypes.byref(_prop(device)), 0), "cuMemCreate")
    fd = ctypes.c_int(-1)
    try:
        _check(lib.cuMemExportToShareableHandle(ctypes.byref(fd), handle.value, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
               "cuMemExportToShareableHandle")
        return Mapping(handle.value, size, device, fd.value)
    except VmmError:
        if fd.value >= 0:
            os.close(fd.value)
        lib.cuMemRelease(handle.value)
        raise


def attach(fd, nbytes, device):
    """The allocation another process sent as fd (which stays the
    caller's to close), mapped here whole: nbytes is what the sender says
    it holds, and the driver refuses a size the allocation does not have."""
    if nbytes <= 0 or nbytes % granularity(device):
        raise VmmError("a shared allocation of %d bytes: not a multiple of the device's %d" % (nbytes, granularity(device)))
    handle = ctypes.c_ulonglong()
    _check(_cu().cuMemImportFromShareableHandle(ctypes.byref(handle), ctypes.c_void_p(fd), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
           "cuMemImportFromShareableHandle")
    try:
        return Mapping(handle.value, nbytes, device)
    except VmmError:
        _cu().cuMemRelease(handle.value)
        raise


def exported(ptr):
    """(Mapping, byte offset) of this process's sendable allocation that
    holds ptr, or None."""
    with _LOCK:
        for base, m in list(_EXPORTED.items()):
            if base <= ptr < base + m.nbytes:
                return m, ptr - base
    return None
