"""Operators: the two-phase wrapper (:mod:`acl_py.ops._two_phase`), operators as declarations
(:mod:`acl_py.ops._declare`) and the operators declared on them. ``acl_py.layer_norm``,
``acl_py.LayerNorm``, ``acl_py.layer_norm_backward``, ``acl_py.LayerNormBackward``,
``acl_py.rms_norm``, ``acl_py.RmsNorm``, ``acl_py.add_rms_norm``, ``acl_py.AddRmsNorm``,
``acl_py.rms_norm_grad``, ``acl_py.RmsNormGrad``, ``acl_py.group_norm``,
``acl_py.GroupNorm``, ``acl_py.gemma_rms_norm``, ``acl_py.GemmaRmsNorm``,
``acl_py.inplace_add_rms_norm``, ``acl_py.InplaceAddRmsNorm``, ``acl_py.add_layer_norm``,
``acl_py.AddLayerNorm``, ``acl_py.deep_norm``, ``acl_py.DeepNorm``, ``acl_py.group_norm_silu``,
``acl_py.GroupNormSilu``, ``acl_py.group_norm_silu_v2``, ``acl_py.GroupNormSiluV2``,
``acl_py.add_layer_norm_grad``, ``acl_py.AddLayerNormGrad``, ``acl_py.batch_norm``,
``acl_py.BatchNorm``, ``acl_py.deep_norm_grad``, ``acl_py.DeepNormGrad``,
``acl_py.group_norm_backward``, ``acl_py.GroupNormBackward``, ``acl_py.fast_layer_norm``,
``acl_py.FastLayerNorm``, ``acl_py.batch_norm_backward``, ``acl_py.BatchNormBackward``,
``acl_py.batch_norm_reduce_backward``, ``acl_py.BatchNormReduceBackward``,
``acl_py.batch_norm_elemt_backward``, ``acl_py.BatchNormElemtBackward``,
``acl_py.instance_norm``, ``acl_py.InstanceNorm``, ``acl_py.rms_norm_quant``,
``acl_py.RmsNormQuant``, ``acl_py.batch_norm_gather_stats_with_counts``, ``acl_py.BatchNormGatherStatsWithCounts``,
``acl_py.batch_norm_elemt``, ``acl_py.BatchNormElemt``, ``acl_py.batch_norm_stats``,
``acl_py.BatchNormStats``, ``acl_py.batch_norm_reduce``, ``acl_py.BatchNormReduce``,
``acl_py.add_rms_norm_quant``, ``acl_py.AddRmsNormQuant``,
``acl_py.add_rms_norm_dynamic_quant``, ``acl_py.AddRmsNormDynamicQuant``,
``acl_py.add_rms_norm_dynamic_quant_v2``, ``acl_py.AddRmsNormDynamicQuantV2``,
``acl_py.add_layer_norm_quant`` and ``acl_py.AddLayerNormQuant`` are re-exported at the package top
level.
:data:`DECLARED` has every declared operator by name (``acl-py smoke`` runs their smoke
cases); importing this package fills it."""
from ._declare import (DECLARED, VIEW_COPY, Arg, Declared, OutputError, OutputNotWritten, Part,
                       Plan, as_many_elements, bool_array, configured, double, flag, int_array,
                       format_option, integer, output, part_of, staged, string, tensor,
                       checked_later, diagnosing)
from ._two_phase import Executor, Operator, Param, value
from .layer_norm import LAYER_NORM, LayerNorm, layer_norm
from .layer_norm_backward import LAYER_NORM_BACKWARD, LayerNormBackward, layer_norm_backward
from .rms_norm import RMS_NORM, RmsNorm, rms_norm
from .add_rms_norm import ADD_RMS_NORM, AddRmsNorm, add_rms_norm
from .rms_norm_grad import RMS_NORM_GRAD, RmsNormGrad, rms_norm_grad
from .group_norm import GROUP_NORM, GroupNorm, group_norm
from .gemma_rms_norm import GEMMA_RMS_NORM, GemmaRmsNorm, gemma_rms_norm
from .inplace_add_rms_norm import INPLACE_ADD_RMS_NORM, InplaceAddRmsNorm, inplace_add_rms_norm
from .add_layer_norm import ADD_LAYER_NORM, AddLayerNorm, add_layer_norm
from .deep_norm import DEEP_NORM, DeepNorm, deep_norm
from .group_norm_silu import (GROUP_NORM_SILU, GROUP_NORM_SILU_V2, GroupNormSilu,
                              GroupNormSiluV2, group_norm_silu, group_norm_silu_v2)
from .add_layer_norm_grad import ADD_LAYER_NORM_GRAD, AddLayerNormGrad, add_layer_norm_grad
from .batch_norm import BATCH_NORM, BatchNorm, batch_norm
from .deep_norm_grad import DEEP_NORM_GRAD, DeepNormGrad, deep_norm_grad
from .group_norm_backward import GROUP_NORM_BACKWARD, GroupNormBackward, group_norm_backward
from .fast_layer_norm import FAST_LAYER_NORM, FastLayerNorm, fast_layer_norm
from .batch_norm_backward import BATCH_NORM_BACKWARD, BatchNormBackward, batch_norm_backward
from .batch_norm_reduce_backward import (BATCH_NORM_REDUCE_BACKWARD, BatchNormReduceBackward,
                                         batch_norm_reduce_backward)
from .batch_norm_elemt_backward import (BATCH_NORM_ELEMT_BACKWARD, BatchNormElemtBackward,
                                        batch_norm_elemt_backward)
from .instance_norm import INSTANCE_NORM, InstanceNorm, instance_norm
from .rms_norm_quant import RMS_NORM_QUANT, RmsNormQuant, rms_norm_quant
from .batch_norm_gather_stats_with_counts import (BATCH_NORM_GATHER_STATS_WITH_COUNTS,
                                                  BatchNormGatherStatsWithCounts,
                                                  batch_norm_gather_stats_with_counts)
from .batch_norm_elemt import BATCH_NORM_ELEMT, BatchNormElemt, batch_norm_elemt
from .batch_norm_stats import BATCH_NORM_STATS, BatchNormStats, batch_norm_stats
from .batch_norm_reduce import BATCH_NORM_REDUCE, BatchNormReduce, batch_norm_reduce
from .add_rms_norm_quant import ADD_RMS_NORM_QUANT, AddRmsNormQuant, add_rms_norm_quant
from .add_rms_norm_dynamic_quant import (ADD_RMS_NORM_DYNAMIC_QUANT,
                                         ADD_RMS_NORM_DYNAMIC_QUANT_V2,
                                         AddRmsNormDynamicQuant, AddRmsNormDynamicQuantV2,
                                         add_rms_norm_dynamic_quant,
                                         add_rms_norm_dynamic_quant_v2)
from .add_layer_norm_quant import (ADD_LAYER_NORM_QUANT, AddLayerNormQuant,
                                   add_layer_norm_quant)

__all__ = ["layer_norm", "LayerNorm", "LAYER_NORM", "layer_norm_backward", "LayerNormBackward",
           "LAYER_NORM_BACKWARD", "rms_norm", "RmsNorm", "RMS_NORM", "add_rms_norm", "AddRmsNorm",
           "ADD_RMS_NORM", "rms_norm_grad", "RmsNormGrad", "RMS_NORM_GRAD", "group_norm",
           "GroupNorm", "GROUP_NORM", "gemma_rms_norm", "GemmaRmsNorm", "GEMMA_RMS_NORM",
           "inplace_add_rms_norm", "InplaceAddRmsNorm", "INPLACE_ADD_RMS_NORM", "add_layer_norm",
           "AddLayerNorm", "ADD_LAYER_NORM", "deep_norm", "DeepNorm", "DEEP_NORM",
           "group_norm_silu", "GroupNormSilu", "GROUP_NORM_SILU", "group_norm_silu_v2",
           "GroupNormSiluV2", "GROUP_NORM_SILU_V2", "add_layer_norm_grad", "AddLayerNormGrad",
           "ADD_LAYER_NORM_GRAD", "batch_norm", "BatchNorm", "BATCH_NORM", "deep_norm_grad",
           "DeepNormGrad", "DEEP_NORM_GRAD", "group_norm_backward", "GroupNormBackward",
           "GROUP_NORM_BACKWARD", "fast_layer_norm", "FastLayerNorm", "FAST_LAYER_NORM",
           "batch_norm_backward", "BatchNormBackward", "BATCH_NORM_BACKWARD",
           "batch_norm_reduce_backward", "BatchNormReduceBackward", "BATCH_NORM_REDUCE_BACKWARD",
           "batch_norm_elemt_backward", "BatchNormElemtBackward", "BATCH_NORM_ELEMT_BACKWARD",
           "instance_norm", "InstanceNorm", "INSTANCE_NORM",
           "rms_norm_quant", "RmsNormQuant", "RMS_NORM_QUANT",
           "batch_norm_gather_stats_with_counts", "BatchNormGatherStatsWithCounts",
           "BATCH_NORM_GATHER_STATS_WITH_COUNTS", "batch_norm_elemt", "BatchNormElemt",
           "BATCH_NORM_ELEMT", "batch_norm_stats", "BatchNormStats", "BATCH_NORM_STATS",
           "batch_norm_reduce", "BatchNormReduce", "BATCH_NORM_REDUCE",
           "add_rms_norm_quant", "AddRmsNormQuant", "ADD_RMS_NORM_QUANT",
           "add_rms_norm_dynamic_quant", "AddRmsNormDynamicQuant", "ADD_RMS_NORM_DYNAMIC_QUANT",
           "add_rms_norm_dynamic_quant_v2", "AddRmsNormDynamicQuantV2",
           "ADD_RMS_NORM_DYNAMIC_QUANT_V2",
           "add_layer_norm_quant", "AddLayerNormQuant", "ADD_LAYER_NORM_QUANT",
           "Operator",
           "Executor", "Param", "Declared", "Plan", "Arg", "DECLARED", "OutputError",
           "OutputNotWritten", "Part", "part_of",
           "tensor", "output", "as_many_elements", "format_option", "configured", "int_array",
           "bool_array", "double", "integer", "flag", "string", "value", "staged", "VIEW_COPY",
           "checked_later", "diagnosing"]
