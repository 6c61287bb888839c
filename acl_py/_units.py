"""Sizes for people: every message that states a size in bytes also gives it in KiB, MiB or
GiB (binary units, as device memory is specified), e.g. ``104857600 bytes (100.0 MiB)``."""
from __future__ import annotations

_UNITS = (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))


def human_size(nbytes: int) -> str:
    """``100.0 MiB``; ``512 B`` below one KiB."""
    for unit, scale in _UNITS:
        if abs(nbytes) >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} B"


def size_text(nbytes: int) -> str:
    """``104857600 bytes (100.0 MiB)``: exact for scripts and logs, readable for people."""
    if abs(nbytes) < 1024:
        return f"{nbytes} bytes"
    return f"{nbytes} bytes ({human_size(nbytes)})"
