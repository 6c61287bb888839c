"""Operators: the shared two-phase wrapper (:mod:`acl_py.ops._two_phase`) and the operators
built on it. ``acl_py.layer_norm_backward`` and ``acl_py.LayerNormBackward`` are re-exported
at the package top level."""
from ._two_phase import Executor, Operator, Param, bool_array, int_array, tensor, value
from .layer_norm import LAYER_NORM
from .layer_norm_backward import (LAYER_NORM_BACKWARD, LayerNormBackward, clear_caches,
                                  layer_norm_backward)

__all__ = ["layer_norm_backward", "LayerNormBackward", "LAYER_NORM_BACKWARD", "LAYER_NORM",
           "Operator", "Executor", "Param", "tensor", "int_array", "bool_array", "value", "clear_caches"]
