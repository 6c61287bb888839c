"""One aclnn call through the raw C ABI (acl_py.raw), for tests comparing an operator
function's results with it: the inputs are acl_py DeviceTensors (their own aclTensors), the
outputs are described by their aclDataType value, made here over new device buffers with
aclCreateTensor, filled with a sentinel, and read back as bytes after phase two has run on a
stream and synchronized. Nothing of the declarative operator layer takes part.
"""
from __future__ import annotations

import numpy as np

import acl_py
from acl_py.raw import ffi, lib

SENTINEL = 0xB3


def raw_call(name, inputs, outputs):
    """``aclnn<name>GetWorkspaceSize(*inputs, *outputs, &ws, &executor)`` then
    ``aclnn<name>`` with the workspace it asks for: ``inputs`` DeviceTensors (None: NULL),
    numbers or cffi values in phase one's order before the outputs; ``outputs``
    ``(shape, acl_dtype)`` pairs of contiguous one-byte-element tensors, or
    ``(shape, acl_dtype, itemsize)`` (None: NULL). Returns each output's bytes (uint8 of its
    shape, with a last dim of ``itemsize`` when above 1; None for a NULL one)."""
    p1 = getattr(lib, f"aclnn{name}GetWorkspaceSize")
    p2 = getattr(lib, f"aclnn{name}")
    bufs, handles = [], []
    try:
        for spec in outputs:
            if spec is None:
                bufs.append(None)
                handles.append(ffi.NULL)
                continue
            shape, code, size = (tuple(spec) + (1,))[:3]
            n = int(np.prod(shape))
            buf = acl_py.DeviceBuffer(max(n * size, 1))
            buf.copy_from_host(np.full(max(n * size, 1), SENTINEL, np.uint8))
            bufs.append(buf)
            strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
            h = lib.aclCreateTensor(ffi.new("int64_t[]", list(shape) or [0]), len(shape), code,
                                    ffi.new("int64_t[]", strides or [0]), 0, lib.ACL_FORMAT_ND,
                                    ffi.new("int64_t[]", [n]), 1, buf.ptr)
            assert h != ffi.NULL
            handles.append(h)
        args = [ffi.NULL if v is None else v.handle if isinstance(v, acl_py.DeviceTensor)
                else v for v in inputs]
        ws = ffi.new("uint64_t *")
        ex = ffi.new("aclOpExecutor **")
        rc = p1(*args, *handles, ws, ex)
        assert rc == 0, (rc, ffi.string(lib.aclGetRecentErrMsg()).decode())
        # the workspace phase one asked for (a device's size; NULL when 0)
        work = acl_py.DeviceBuffer(ws[0]) if ws[0] else None
        bufs.append(work)
        with acl_py.Stream() as st:
            assert p2(work.ptr if work else ffi.NULL, ws[0], ex[0], st.handle) == 0
            st.synchronize()
        res = []
        for buf, spec in zip(bufs, outputs):
            if buf is None:
                res.append(None)
                continue
            shape, _, size = (tuple(spec) + (1,))[:3]
            host = np.empty(buf.nbytes, np.uint8)
            buf.copy_to_host(host)
            res.append(host[:int(np.prod(shape)) * size].reshape(
                tuple(shape) + ((size,) if size > 1 else ())))
        return res
    finally:
        for h in handles:
            if h != ffi.NULL:
                assert lib.aclDestroyTensor(h) == 0
        for buf in bufs:
            if buf is not None:
                buf.close()
