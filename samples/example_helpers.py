"""What every port of the vendor's C++ operator examples shares: the examples' own helper
steps (putting host data on the device as an aclTensor, allocating the workspace, printing a
result the way they print it), written once with acl-py's objects.

Not a sample itself: the ports in this directory (``layer_norm_backward.py``,
``layer_norm.py``, ``rms_norm.py``, ``add.py``, ...) import it. Each function's docstring names
the C++ calls it stands for, so a port stays readable next to the C++ example.
"""
from __future__ import annotations

import numpy as np

import acl_py

__all__ = ["copy_to_device", "create_acl_tensor", "WorkspaceMalloc", "print_result",
           "release"]


def copy_to_device(host_data, shape, dtype=np.float32):
    """The examples' device copy of a tensor's host data: aclrtMalloc(ACL_MEM_MALLOC_HUGE_FIRST)
    of the tensor's bytes (``pool=None``: a direct allocation, not acl-py's memory pool), then
    aclrtMemcpy host to device. The aclTensor is not created yet: acl-py creates it on first
    use, or when ``.handle`` is read (see :func:`create_acl_tensor`)."""
    return acl_py.DeviceTensor.from_numpy(np.array(host_data, dtype=dtype).reshape(shape),
                                          pool=None)


def create_acl_tensor(host_data, shape, dtype=np.float32):
    """:func:`copy_to_device`, then aclCreateTensor right away, as the examples do in one
    helper: contiguous strides in elements, offset 0, ACL_FORMAT_ND, storage dims = view dims
    (reading ``.handle`` creates it)."""
    tensor = copy_to_device(host_data, shape, dtype)
    tensor.handle  # aclCreateTensor
    return tensor


class WorkspaceMalloc:
    """The examples' workspace step, as an ``allocator=`` of an operator's ``launch``: the
    two-phase wrapper calls it only when phase one asks for more than 0 bytes, and it
    allocates them with aclrtMalloc(ACL_MEM_MALLOC_HUGE_FIRST), as the examples do (not from
    acl-py's memory pool). :meth:`close` is the examples' closing aclrtFree of the workspace;
    acl-py frees it no earlier than the stream is past the launch."""

    def __init__(self):
        self.buffers = []

    def __call__(self, nbytes, device_id):
        self.buffers.append(acl_py.DeviceBuffer(nbytes, device_id))
        return self.buffers[-1]

    def close(self):
        for buffer in self.buffers:
            buffer.close()


def print_result(line_format, tensor):
    """aclrtMemcpy device to host of the whole tensor, then one LOG_PRINT (printf) per element,
    as the examples print a result: ``line_format`` takes the element's index and its value,
    e.g. ``"out result[%d] is: %f"`` (a float is printed as printf prints the double it is
    promoted to, so the text is the C++ program's)."""
    for i, value in enumerate(tensor.to_numpy().ravel()):
        print(line_format % (i, value))


def release(*objects):
    """The examples' closing steps, in the order given: aclDestroyTensor and aclrtFree of each
    tensor (a tensor's close() does both), aclDestroyIntArray of an int array, aclrtFree of
    the workspace (:class:`WorkspaceMalloc`), aclrtDestroyStream of the stream: each object's
    close()."""
    for obj in objects:
        obj.close()
