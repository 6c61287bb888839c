"""``aclnnLayerNorm``: the LayerNorm forward (mean and rstd saved for the backward)."""
from __future__ import annotations

from ._two_phase import Operator, int_array, tensor, value

__all__ = ["LAYER_NORM"]

LAYER_NORM = Operator("aclnnLayerNorm", (
    tensor("input"), int_array("normalizedShape"), tensor("weightOptional"),
    tensor("biasOptional"), value("eps"), tensor("out"), tensor("meanOutOptional"),
    tensor("rstdOutOptional")))
