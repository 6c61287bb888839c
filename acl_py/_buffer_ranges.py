"""Byte ranges inside a buffer: the checks a buffer operation makes of its offsets, sizes and
row pitches, each failure an AclArgumentError naming the argument at fault."""
from __future__ import annotations

from ._integers import as_size
from ._units import size_text
from .errors import AclArgumentError


def extent(width, height, pitch):
    """The bytes from a matrix's first row to the end of its last (0 for an empty one)."""
    return 0 if width == 0 or height == 0 else (height - 1) * pitch + width


def check_rows(offset, width, height, pitch, nbytes, what):
    """AclArgumentError naming ``what`` unless the matrix of ``height`` rows of ``width`` bytes
    ``pitch`` apart from ``offset`` lies in ``nbytes``."""
    n = extent(width, height, pitch)
    if offset + n > nbytes:
        raise AclArgumentError(what, f"{height} rows of {width} bytes, {pitch} bytes apart, "
                               f"take {size_text(n)} from offset {offset}: more than the "
                               f"buffer's {size_text(nbytes)}")


def row_pitch(pitch, width, argument):
    """A row pitch: ``width`` by default (rows back to back), never less than it."""
    if pitch is None:
        return width
    pitch = as_size(pitch, argument)
    if pitch < width:
        raise AclArgumentError(argument, f"{pitch} bytes is less than the width ({width} "
                               f"bytes): each row must fit in its pitch")
    return pitch


def check_range(offset, count, nbytes, what):
    """``offset`` as a size; AclArgumentError naming ``what`` unless ``count`` bytes from it
    lie in ``nbytes``."""
    offset = as_size(offset, "offset")
    if offset + count > nbytes:
        raise AclArgumentError(what, f"{size_text(count)} at offset {offset} do not fit in "
                               f"the buffer's {size_text(nbytes)}")
    return offset


def buffer_to_buffer(st, src_st, offset, src_offset, nbytes):
    """``(offset, src_offset, n)`` of an operation reading ``n`` bytes of allocation ``src_st``
    from ``src_offset`` into ``st`` at ``offset`` (``nbytes`` None: the rest of the source),
    each checked to fit."""
    src_offset = check_range(src_offset, 0, src_st.nbytes, "src_offset")
    n = src_st.nbytes - src_offset if nbytes is None else as_size(nbytes, "nbytes")
    check_range(src_offset, n, src_st.nbytes, "nbytes")
    return check_range(offset, n, st.nbytes, "nbytes"), src_offset, n
