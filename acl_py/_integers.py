"""Integer arguments, read one way everywhere: Python and NumPy ints (anything with
``__index__``), never bools or floats; anything else is an AclTypeError naming the argument."""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .errors import AclArgumentError, AclTypeError


def as_int(value: Any, argument: str, what: str = "an int") -> int:
    """``value`` as an int, else AclTypeError naming ``argument`` (``what`` says what was
    expected: ``expected a core count (int), got str 'x'``)."""
    if isinstance(value, (bool, np.bool_)):
        raise AclTypeError(argument, f"expected {what}, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise AclTypeError(argument, f"expected {what}, got {type(value).__name__} "
                           f"{value!r}") from None


def as_size(value: Any, argument: str) -> int:
    """A non-negative int from ``value``, else AclTypeError/AclArgumentError naming
    ``argument``."""
    v = as_int(value, argument)
    if v < 0:
        raise AclArgumentError(argument, f"must be >= 0, got {v}")
    return v
