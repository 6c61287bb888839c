"""acl-py: Python binding over Huawei CANN's operator library (aclnn), with a CPU emulator.

Importing opens no library: the backend (real CANN or the emulator, see ``acl_py.backend()``)
is loaded and the runtime initialized on first use, or by ``acl_py.init()``.
"""
from . import errors
from .errors import (AclError, AclArgumentError, AclTypeError, ClosedError, DeviceError,
                     DeviceMemoryError, NotInitializedError, OperatorParameterError)
from .runtime import (Device, FinalizedError, backend, current_device, device_count, finalize,
                      init, mem_info, release_unused, set_device, synchronize)
from .stream import Event, Stream, default_stream
from .memory import DeviceBuffer, HostBuffer, MemoryPool, get_pool
from .tensor import BoolArray, DeviceTensor, IntArray
from . import dtypes

# ---- operators (acl_py/ops, issue 4): the operator engineer adds the re-exports here ----
# from .ops import layer_norm_backward, LayerNormBackward
# ------------------------------------------------------------------------------------------

__version__ = "0.1.0"

__all__ = [
    "init", "finalize", "backend", "Device", "current_device", "set_device", "device_count",
    "mem_info", "synchronize", "release_unused", "Stream", "Event", "default_stream",
    "DeviceBuffer", "HostBuffer", "MemoryPool", "get_pool", "DeviceTensor", "IntArray",
    "BoolArray", "dtypes", "errors", "AclError", "AclArgumentError", "AclTypeError",
    "ClosedError", "DeviceError", "DeviceMemoryError", "NotInitializedError",
    "OperatorParameterError", "FinalizedError",
]
