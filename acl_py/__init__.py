"""acl-py: Python binding over Huawei CANN's operator library (aclnn), with a CPU emulator.

Importing opens no library: the backend (real CANN or the emulator, see ``acl_py.backend()``)
is loaded and the runtime initialized on first use, or by ``acl_py.init()``.

A tour (runs as is; every object is also a context manager, and whatever is left open is
released in a valid order by ``acl_py.finalize()`` or at interpreter exit)::

    import numpy as np
    import acl_py

    acl_py.init()                                    # optional: first use initializes
    with acl_py.Device(0), acl_py.Stream() as stream:
        x = np.arange(12, dtype=np.float32).reshape(3, 4)
        t = acl_py.DeviceTensor.from_numpy(x)        # contiguous: copied straight over
        v = t[1:, ::2].T                             # a view: strides/offset in elements
        assert (v.to_numpy() == x[1:, ::2].T).all()
        print(v.shape, v.strides, v.offset)          # (2, 2) (2, 4) 4
        v.handle                                     # its aclTensor, created on demand
        buf = acl_py.DeviceBuffer(x.nbytes)
        buf.copy_from_host_async(x, stream)
        buf.close()                                  # freed once the stream is past the copy
        stream.synchronize()
        mask = acl_py.BoolArray([True, False, True]) # aclBoolArray / IntArray likewise
    acl_py.finalize()

Errors: ``acl_py.errors`` (typed by status code: ``DeviceMemoryError``,
``OperatorParameterError``, ...; Python-side argument mistakes are ``AclArgumentError``).
Checking results: ``acl_py.reference`` (NumPy float64 reference and per-dtype tolerances).
Low level: ``acl_py.raw.ffi`` / ``acl_py.raw.lib`` and each wrapper's ``.handle``.
"""
from . import errors
from .errors import (AclError, AclArgumentError, AclTimeoutError, AclTypeError, ClosedError,
                     DeviceError, DeviceMemoryError, HostFunctionError, NotInitializedError,
                     OperatorParameterError)
from .runtime import FinalizedError, ForkedError, backend, finalize, init, release_unused
from .device import (CoreLimits, Device, DeviceAttributes, MemoryUsage, StreamPriorityRange,
                     Topology, Utilization, current_device, device_count, mem_info, run_mode, set_device,
                     synchronize)
from .stream import Event, EventFlag, Notify, Stream, StreamFlag, default_stream
from .context import Context
from .deterministic import (Deterministic, deterministic, get_deterministic,
                            set_deterministic)
from .memory import (DeviceBuffer, HostBuffer, HostRegisterFlag, HostRegistration,
                     MemoryLocation, MemoryPool, get_pool, memory_location)
from .builtin_tasks import ReduceOp
from .soc import cann_attributes, soc_name, supports_bfloat16
from .install import cann_version
from .tensor import DeviceTensor
from .arguments import BoolArray, FloatArray, IntArray, Scalar, ScalarList, TensorList
from . import dtypes
from . import reference   # the NumPy float64 reference results are checked against

# ---- operators (acl_py/ops, issue 4): the operator engineer adds the re-exports here ----
from .ops import layer_norm, LayerNorm, layer_norm_backward, LayerNormBackward
from .ops import rms_norm, RmsNorm
from .ops import add_rms_norm, AddRmsNorm
from .ops import rms_norm_grad, RmsNormGrad
from .ops import group_norm, GroupNorm
from .ops import gemma_rms_norm, GemmaRmsNorm
from .ops import inplace_add_rms_norm, InplaceAddRmsNorm
from .ops import add_layer_norm, AddLayerNorm
from .ops import deep_norm, DeepNorm
from .ops import group_norm_silu, GroupNormSilu, group_norm_silu_v2, GroupNormSiluV2
from .ops import add_layer_norm_grad, AddLayerNormGrad
from .ops import batch_norm, BatchNorm
from .ops import deep_norm_grad, DeepNormGrad
from .ops import group_norm_backward, GroupNormBackward
from .ops import fast_layer_norm, FastLayerNorm
from .ops import batch_norm_backward, BatchNormBackward
from .ops import batch_norm_reduce_backward, BatchNormReduceBackward
from .ops import batch_norm_elemt_backward, BatchNormElemtBackward
from .ops import instance_norm, InstanceNorm
from .ops import rms_norm_quant, RmsNormQuant
from .ops import batch_norm_gather_stats_with_counts, BatchNormGatherStatsWithCounts
from .ops import batch_norm_elemt, BatchNormElemt
from .ops import batch_norm_stats, BatchNormStats
from .ops import batch_norm_reduce, BatchNormReduce
from .ops import add_rms_norm_quant, AddRmsNormQuant
from .ops import add_rms_norm_dynamic_quant, AddRmsNormDynamicQuant
from .ops import add_rms_norm_dynamic_quant_v2, AddRmsNormDynamicQuantV2
from .ops import add_layer_norm_quant, AddLayerNormQuant
# ------------------------------------------------------------------------------------------

__version__ = "0.1.0"


def __getattr__(name):
    # acl_py.aclnn is imported on first use: importing acl_py stays as cheap as before.
    if name == "aclnn":
        import importlib
        return importlib.import_module(".aclnn", __name__)
    raise AttributeError(f"module 'acl_py' has no attribute {name!r}")

__all__ = [
    "init", "finalize", "backend", "Device", "current_device", "set_device", "device_count",
    "mem_info", "synchronize", "release_unused", "soc_name", "supports_bfloat16", "cann_attributes", "run_mode",
    "cann_version", "DeviceAttributes", "StreamPriorityRange", "Utilization", "CoreLimits",
    "Topology", "MemoryUsage", "MemoryLocation", "memory_location",
    "Stream", "StreamFlag", "Event", "EventFlag", "Notify", "default_stream", "Context",
    "Deterministic", "deterministic", "get_deterministic", "set_deterministic",
    "DeviceBuffer", "HostBuffer", "HostRegistration", "HostRegisterFlag", "MemoryPool", "ReduceOp", "get_pool", "DeviceTensor", "IntArray",
    "BoolArray", "Scalar", "FloatArray", "TensorList", "ScalarList", "dtypes", "errors",
    "reference", "AclError", "AclArgumentError", "AclTimeoutError", "AclTypeError",
    "ClosedError", "DeviceError", "DeviceMemoryError", "HostFunctionError",
    "NotInitializedError",
    "OperatorParameterError", "FinalizedError", "ForkedError", "layer_norm", "LayerNorm",
    "layer_norm_backward", "LayerNormBackward", "rms_norm", "RmsNorm",
    "add_rms_norm", "AddRmsNorm",
    "rms_norm_grad", "RmsNormGrad",
    "group_norm", "GroupNorm",
    "gemma_rms_norm", "GemmaRmsNorm", "inplace_add_rms_norm", "InplaceAddRmsNorm",
    "add_layer_norm", "AddLayerNorm", "deep_norm", "DeepNorm",
    "group_norm_silu", "GroupNormSilu", "group_norm_silu_v2", "GroupNormSiluV2",
    "add_layer_norm_grad", "AddLayerNormGrad", "deep_norm_grad", "DeepNormGrad",
    "batch_norm", "BatchNorm", "group_norm_backward", "GroupNormBackward", "fast_layer_norm",
    "FastLayerNorm", "batch_norm_backward", "BatchNormBackward", "batch_norm_reduce_backward",
    "BatchNormReduceBackward", "batch_norm_elemt_backward", "BatchNormElemtBackward",
    "instance_norm", "InstanceNorm",
    "rms_norm_quant", "RmsNormQuant",
    "batch_norm_gather_stats_with_counts", "BatchNormGatherStatsWithCounts", "batch_norm_elemt",
    "BatchNormElemt", "batch_norm_stats", "BatchNormStats", "batch_norm_reduce",
    "BatchNormReduce", "add_rms_norm_quant",
    "AddRmsNormQuant", "add_rms_norm_dynamic_quant", "AddRmsNormDynamicQuant",
    "add_rms_norm_dynamic_quant_v2", "AddRmsNormDynamicQuantV2",
    "add_layer_norm_quant", "AddLayerNormQuant",
]
