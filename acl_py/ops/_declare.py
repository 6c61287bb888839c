"""Operators as declarations: one description of an operator's parameters, and the machinery
every declared operator gets from it.

A :class:`Declared` operator is built from the phase-one parameter list, each parameter an
:class:`Arg` carrying what the Python side needs beyond the C kind (:mod:`._two_phase`):

* its **role**: an input tensor (``tensor``, optional with ``optional=True``), an output
  tensor (``output``), an int array, a bool array (``length=`` entries; optional: None
  passes NULL), a double, an ``int64_t`` (``integer``), a C ``bool`` (``flag``); or an
  **option** (``option``): a
  Python-only argument that is no C parameter, read by the rules (an output's dtype: the
  quantizing operators' ``y_dtype``);
* its **Python name** (argument errors name it; default: the C name in snake case without
  ``Optional``/``Out``) and default;
* **dtype rules** for inputs: the operator's dtypes, ``like=`` another tensor's dtype
  (``or_float32=True``: or float32; ``or_wider=True``: or any of the operator's dtypes at
  least as wide, e.g. statistics "not narrower than input");
* for outputs, how a **default output** is made: ``shape(a)``, ``dtype(a)`` over the bound
  arguments ``a`` (``a.input``, ``a.normalized_shape``...), what a given ``out=`` entry may be:
  that dtype, or any of ``dtypes`` where the device casts its result to the output's dtype
  (a tuple, or a function ``dtypes(a, part)`` giving one where phase one's rule depends on
  the part or the arguments: BatchNormBackward's on Ascend 950);
  that shape, or another that ``fits(a, shape, part, shapes)`` accepts (phase one's rule on
  that part, e.g. :func:`as_many_elements`); and whether it is requested at all
  (``when(a)``, e.g. an output mask);
* an output written **in place** (``output(name, into="x1")``): the operator writes it into
  that input (a C ``aclTensor *...Ref`` parameter, declared as ``tensor(..., written=True)``),
  so it has no C parameter of its own. A DeviceTensor call returns the input tensor itself
  there; a NumPy call writes the result back into the caller's array (which must be writable)
  and returns that array; its ``out=`` entry must be None;
* whether the part writes an output (``unwritten(a, part)``: why not, e.g. AddRmsNorm's rstd
  on Atlas inference parts; ``unwritten(a, part, shapes)`` where the outputs' shapes decide
  it, e.g. InstanceNorm's return before its kernel when any output is empty).
* an input's **aclFormat** where the op_api reads its layout from the storage format
  (``tensor("x", format="data_format")`` beside a :func:`format_option` of that name: phase
  one gets a :meth:`~acl_py.DeviceTensor.with_format` view of it; every other tensor is ND).

Relations between arguments that are the operator's own (trailing dims, matching shapes) are
one ``check(a)`` function of the declaration, raising :class:`~acl_py.AclArgumentError` naming
the argument. The checks run in the op_api's order, so that of two broken rules the one the
device refuses is named: ``precheck(a)`` for rules it checks before any dtype (InstanceNorm's
dataFormat), the inputs' dtypes, with ``out_dtypes_first`` the ``out=`` entries' dtypes (an
op_api whose dtype check covers the outputs before any shape), ``check(a)`` (which reads
:func:`diagnosing` where the op_api reaches its rules only on some parts), then the ``out=``
entries. Everything else is generic:

* :meth:`Declared.call`: NumPy arrays in, NumPy arrays out (staged through the device and
  synchronized), or DeviceTensors in, DeviceTensors out (queued on the stream); ``out=``
  (entries ``None`` are allocated, entries of unrequested outputs ignored). The checks above
  raise :class:`~acl_py.AclTypeError` / ``AclArgumentError`` naming the Python argument.
  A NumPy call makes them all before any C call (before copying anything to the device).
  A DeviceTensor call checks before any C call only what the library cannot: argument kinds
  and conversions, closed tensors, one device; the operator's rules (dtypes, shapes) are
  checked once, by phase one, with the vendor's rules, and only when phase one refuses do the
  Python checks run to name the argument: the error then also carries phase one's status
  ``code``, ``call`` and ``message`` (``aclGetRecentErrMsg()``), and the refusal is its
  cause. A refusal the Python checks cannot explain (limits that are the operator's own)
  surfaces as phase one's typed error (``acl_py.errors``). The diagnosis respects the
  refusal's **stage**: a rule the device checks only after the op_api's checks (its tiling,
  an L0 op, the kernel's lookup) is raised by ``check`` through :func:`staged` with the codes
  the vendor refuses it with (the operator's rules table in docs/emulator.md; the
  declaration lists them, ``staged_codes=``); while a refusal with another code is
  diagnosed such a rule is passed over (the device returned before reaching it) and the
  checks go on, so an earlier stage's rule is found wherever the check makes it; if none
  breaks, the refusal is raised as it is. An unmarked rule may explain any refusal;
* :class:`Plan`: phase one once with a repeatable executor, then ``run(stream)``;
* ``reference`` / ``error_scale`` (float64, :mod:`acl_py.reference`) and
  :meth:`Declared.check_outputs` to judge outputs against them;
* ``smoke_cases`` (and ``smoke_full_cases``, for full runs only): ``(name, make)`` pairs,
  ``make()`` giving NumPy inputs in declaration order. Every declaration enters
  :data:`DECLARED`, and ``acl-py smoke`` (:mod:`acl_py.smoke`) runs the smoke cases of every
  entry on device tensors: declaring an operator is all it takes to smoke-test it.

An operator module is then the declaration, its ``check``, and a two-line public function
(for its signature and docstring). The parameter list could as well come from a parsed C
prototype: ``const aclTensor *`` is an input, ``aclTensor *`` an output, ``...Optional``
optional, ``double`` a double, ``int64_t`` an integer, ``bool`` a flag.
"""
from __future__ import annotations

import contextvars
import inspect
import math
import re
from collections import namedtuple
from typing import Callable, Optional, Sequence, Union

import numpy as np

from .. import device as _device
from .. import dtypes as _dt
from .. import soc as _soc
from .. import stream as _stream
from .._ffi import ffi
from ..arguments import BoolArray, IntArray, c_string, shared_array
from ..errors import (AclArgumentError, AclError, AclTypeError, ClosedError,
                      OperatorParameterError)
from ..tensor import DeviceTensor, as_dims
from ._two_phase import (BOOL_ARRAY, INT_ARRAY, STRING, TENSOR, VALUE, Executor, Operator,
                         Param)

__all__ = ["Arg", "tensor", "output", "shape_of", "dtype_of", "check_same_shape",
           "check_trailing_dims", "as_many_elements", "int_array", "bool_array", "double",
           "integer", "flag", "string", "option", "dtype_option", "format_option", "staged",
           "diagnosing", "VIEW_COPY", "checked_later", "Declared",
           "Plan", "Part", "part_of", "DECLARED", "OutputError", "OutputNotWritten", "FLOATS",
           "REQUIRED"]

# What operator functions take and give: NumPy arrays or DeviceTensors, one kind a call
# (the same kind out as in), and their out= sequences.
Operand = Union[np.ndarray, DeviceTensor]
OutArg = Optional[Sequence[Optional[Operand]]]

REQUIRED = object()   # default of a parameter the caller must give
IN, OUT = "in", "out"
OPTION = "option"     # the kind of a Python-only argument (no C parameter: see option)
FLOATS = ("float32", "float16", "bfloat16")


def python_name(c_name, is_output=False):
    """``weightOptional`` -> ``weight``, ``normalizedShape`` -> ``normalized_shape``; an
    output also loses ``Out``: ``gradInputOut`` -> ``grad_input`` (an input ``gradOut`` stays
    ``grad_out``)."""
    base = re.sub(r"Out(Optional)?$" if is_output else r"Optional$", "", c_name) or c_name
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", base).lower()


class Arg(Param):
    """One phase-one parameter with its Python-side description (see the module doc)."""

    __slots__ = ("py", "role", "optional", "default", "dtypes", "like", "or_float32", "or_wider",
                 "shape", "dtype", "fits", "when", "length", "items", "convert", "value_type",
                 "written", "into", "unwritten", "int4_as_int32", "format", "later")

    def __init__(self, c_name, kind, role=IN, *, name=None, optional=False, default=REQUIRED,
                 dtypes=None, like=None, or_float32=False, or_wider=False, shape=None, dtype=None,
                 fits=None, when=None, length=None, items=None, convert=None,
                 written=False, into=None, unwritten=None, int4_as_int32=None, format=None,
                 later=None):
        super().__init__(c_name, kind)
        self.later = later        # see output()
        self.format = format      # see tensor()
        self.unwritten = unwritten
        self.int4_as_int32 = int4_as_int32    # see output()
        # a plain C value's conversion (double: _double, int64_t: _integer, bool: _flag) and
        # the Python type it gives, which a call's value is taken as without converting
        self.convert = convert or _double
        self.value_type = {_integer: int, _flag: bool, _string: str}.get(self.convert, float)
        self.py = name or python_name(c_name, role is OUT)
        self.role = role
        self.optional = optional
        self.default = None if optional and default is REQUIRED else default
        self.dtypes = dtypes
        self.like = like
        self.or_float32 = or_float32
        self.or_wider = or_wider
        self.shape = shape
        self.dtype = dtype
        self.fits = fits
        self.when = when
        self.length = length
        self.items = items
        self.written = written    # an input the operator writes a result into
        self.into = into          # an output written into that input (no C parameter)

    def out_dtypes(self, a, device=None):
        """An output's ``dtypes`` for bound arguments ``a`` on ``device`` (default: the
        current one): the names of the dtypes a given entry may have, or None (only
        ``dtype(a)``). The part is looked up only for a ``dtypes`` that depends on it, so a
        call's check of a tuple costs no device lookup."""
        return self.dtypes(a, part_of(device)) if callable(self.dtypes) else self.dtypes


def tensor(c_name, *, name=None, optional=False, dtypes=FLOATS, like=None, or_float32=False,
           or_wider=False, written=False, format=None):
    """An input ``const aclTensor *``; ``like``: its dtype must be that argument's
    (``or_float32``: or float32; ``or_wider``: or any of ``dtypes`` at least as wide).
    ``written``: an ``aclTensor *...Ref`` the operator also writes a result into (named by an
    ``output(..., into=name)``). ``format``: the Python name of a :func:`format_option`
    whose value is the aclFormat phase one gets this tensor in (a view of it,
    :meth:`~acl_py.DeviceTensor.with_format`; every other tensor goes as ND)."""
    return Arg(c_name, TENSOR, IN, name=name, optional=optional, dtypes=dtypes, like=like,
               or_float32=or_float32, or_wider=or_wider, written=written, format=format)


def output(c_name, *, name=None, shape=None, dtype=None, dtypes=None, fits=None,
           when=None, into=None, unwritten=None, int4_as_int32=None, later=None):
    """An output ``aclTensor *``: a default one has ``shape(a)`` and ``dtype(a)`` (an input's:
    :func:`shape_of`, :func:`dtype_of`; ``dtype`` may also be one fixed dtype); a given one
    that shape (or another where ``fits(a, shape, part, shapes)``, phase one's rule for it on
    ``part``, a :class:`Part`, returns None rather than the rule the shape breaks:
    :func:`as_many_elements`; ``shapes`` maps each requested output's Python name to the shape
    phase one receives for it, the caller's entry or the default, for a rule relating
    outputs) and that dtype, or any of ``dtypes`` (the dtypes phase one accepts for it, where
    the device casts its result: LayerNorm's; a tuple, whatever the inputs, or a function
    ``dtypes(a, part)`` giving them: :meth:`Arg.out_dtypes`); ``when(a)`` false:
    not requested (NULL, returned as None). ``into``: the Python name of the written input
    this output is written into (no C parameter of its own: ``c_name`` is only its name,
    and its shape and dtype are that input's). ``unwritten(a, part)`` (``part`` a
    :class:`Part`): None where the part's kernel writes the output for these arguments, else
    why it does not, naming the vendor file (the emulator's rule, docs/emulator.md);
    ``unwritten(a, part, shapes)`` (``shapes`` as ``fits``'s) where that depends on the
    shapes phase one receives for the outputs (an op_api returning before its kernel when
    any output is empty: InstanceNorm's). An output the part does not write is still handed
    to phase one (the operator requires it) but as a scratch tensor of the call's own: the
    result holds None in its place and a caller's ``out=`` entry is left as it was.
    ``int4_as_int32(part)``: true where the part's op_api takes this output's INT4 results
    only as INT32 words, eight values to a word, the last dim / 8 (aclnnRmsNormQuant on
    Atlas A2/A3, which views its INT4 result so and cannot copy it into an INT4-typed
    tensor): an INT4 output (new, or an ``out=`` entry) is then handed to phase one as
    :meth:`~acl_py.DeviceTensor.int4_words` over its bytes, and the caller still gets the
    INT4 tensor (NumPy: its int8 values). An entry whose bytes are no whole words goes as it
    is, for phase one to refuse (its code), and its ``out=`` check names it.
    ``later(a, part, rule, value)``: for an ``out=`` entry breaking ``rule`` ("shape" or
    "dtype"; ``value`` the entry's), None where the op_api's own checks refuse it, else the
    status codes the device refuses it with at a later stage: a generated interface's tiling
    (561002) or the op_api's last step, the copy of the result into the entry (its ViewCopy,
    hicann/ops-math conversion/contiguous/op_host/op_api/contiguous.cpp
    ``CheckViewCopyParams``: :data:`VIEW_COPY`). The ``out=`` rule is then raised as
    :func:`staged`'s (the declaration lists the codes, ``staged_codes=``);
    :func:`checked_later` makes the usual ``later``."""
    if into is not None and unwritten is not None:
        raise TypeError(f"output {c_name!r}: an output written in place has no unwritten=")
    if into is not None:
        shape, dtype = shape_of(into), dtype_of(into)
    elif shape is None or dtype is None:
        raise TypeError(f"output {c_name!r}: shape and dtype are required (or into=)")
    if isinstance(dtype, (type, np.dtype, str)):    # np.float32 is callable: a type, not a rule
        dtype = _always(np.dtype(dtype))
    if unwritten is not None and len(inspect.signature(unwritten).parameters) < 3:
        unwritten = _shapes_unread(unwritten)
    return Arg(c_name, TENSOR, OUT, name=name, shape=shape, dtype=dtype, dtypes=dtypes,
               fits=fits, when=when, into=into, unwritten=unwritten,
               int4_as_int32=int4_as_int32, later=later)


# The op_api's code for a failed copy of a result into the caller's output (a NULL
# l0op::ViewCopy, CHECK_RET(..., ACLNN_ERR_INNER_NULLPTR))
VIEW_COPY = (561103,)


def checked_later(codes, *, shape=False, dtype=False, where=None, ranks=None):
    """An output's ``later`` (:func:`output`): an ``out=`` entry of another shape (``shape``)
    or dtype (``dtype``) than the result's is refused only at a later stage than the op_api's
    checks, with ``codes`` (:data:`VIEW_COPY`, a generated interface's tiling 561002), on the
    parts where ``where(part)`` holds (None: every part); elsewhere, for the other rule, and
    for a shape whose rank is outside ``ranks`` (``(low, high)``: the op_api's rank bounds),
    the op_api's own checks refuse it."""
    codes = tuple(codes)

    def later(a, part, rule, value):
        if not (shape if rule == "shape" else dtype) or (where is not None and not where(part)):
            return None
        if rule == "shape" and ranks is not None and not ranks[0] <= len(value) <= ranks[1]:
            return None
        return codes
    return later


def _shapes_unread(unwritten):
    """An ``unwritten(a, part)`` as the three-argument rule :meth:`Declared.not_written`
    calls (its answer does not depend on the outputs' shapes)."""
    def rule(a, part, shapes):
        return unwritten(a, part)
    return rule


def shape_of(name):
    """An output's ``shape``: the shape of the argument named ``name`` (its Python name)."""
    return lambda a: a[name].shape


def dtype_of(name):
    """An output's ``dtype``: the dtype of the argument named ``name`` (its Python name)."""
    return lambda a: a[name].dtype


def _broken(codes, arg, problem, error=AclArgumentError):
    """A broken rule of a check: raised, or through :func:`staged` where ``codes`` (the
    vendor's codes for it, a later stage's) are given."""
    if codes is None:
        raise error(arg, problem)
    staged(codes, arg, problem, error)


def check_same_shape(arg, shape, of, of_shape, codes=None):
    """For a declaration's ``check``: ``arg``'s ``shape`` must be ``of``'s ``of_shape``
    (AclArgumentError naming ``arg`` otherwise; ``codes``: a rule of a later stage, as
    :func:`staged`'s)."""
    if shape != of_shape:
        _broken(codes, arg, f"shape {shape} must equal {of}'s shape {of_shape}")


def check_trailing_dims(arg, shape, of, of_shape, codes=None):
    """For a declaration's ``check``: ``arg``'s ``shape`` must be the trailing dims of
    ``of``'s ``of_shape``, at least one (a norm's gamma against its input; ``codes`` as
    :func:`check_same_shape`'s)."""
    if not shape or len(shape) > len(of_shape) or of_shape[len(of_shape) - len(shape):] != shape:
        _broken(codes, arg, f"shape {shape} must equal the trailing dims of {of}'s shape "
                f"{of_shape}")


def _always(dt):
    return lambda a: dt


def as_many_elements(shape):
    """An output's ``fits`` (:func:`output`) accepting any shape of as many elements as
    ``shape(a)`` (LayerNormBackward's gradients: phase one compares element counts only)."""
    def fits(a, given, part=None, shapes=None):
        want = shape(a)
        if math.prod(given) == math.prod(want):
            return None
        return f"must hold {math.prod(want)} elements (as {want})"
    return fits


# The usual ``source`` of :func:`configured`: the operator's definition, whose AddConfig calls
# name the families it builds a kernel for (``OP_DEF.format("add_rms_norm")``).
OP_DEF = "hicann/ops-nn norm/{0}/op_host/{0}_def.cpp (its AddConfig per part)"


class KernelParts:
    """A declaration's ``parts`` from its operator definition's kernel configurations: the
    lower-case families (:func:`acl_py.soc.short_soc_version`) ``source`` gives a kernel
    ("ascend910b", "ascend910_93", "ascend310p", "ascend950", ...). ``source`` names the
    vendor file and rule that says so (the ``op_host/*_def.cpp`` adding a config per family,
    or the op_api's platform check): the one place a part's lack is explained (tests skipping
    a part without a kernel quote it). Called with a part's name: true for a part of those
    families and for a part whose family is not known."""

    __slots__ = ("families", "source")

    def __init__(self, families, source):
        self.families = frozenset(families)
        self.source = source

    def __call__(self, soc):
        family = _soc.short_soc_version(soc)
        return family is None or family.lower() in self.families

    def __repr__(self):
        return f"configured({', '.join(map(repr, sorted(self.families)))}, source=...)"


def configured(*families, source):
    """A declaration's ``parts``: the :class:`KernelParts` of ``families``, as ``source`` (the
    vendor file and rule) configures them."""
    return KernelParts(families, source)


def int_array(c_name, *, name=None, default=REQUIRED):
    """An ``aclIntArray *`` given as an int or a sequence of non-negative ints."""
    return Arg(c_name, INT_ARRAY, IN, name=name, default=default)


def bool_array(c_name, *, name=None, default=REQUIRED, length=None, items=None,
               optional=False):
    """An ``aclBoolArray *`` given as a sequence of ``length`` bools (``items``: what each
    entry means, for messages); ``optional``: None passes NULL (the default then)."""
    return Arg(c_name, BOOL_ARRAY, IN, name=name, optional=optional, default=default,
               length=length, items=items)


def double(c_name, *, name=None, default=REQUIRED):
    """A ``double`` given as a real number."""
    return Arg(c_name, VALUE, IN, name=name, default=default)


def integer(c_name, *, name=None, default=REQUIRED):
    """An ``int64_t`` given as an int (a NumPy integer too; not a bool)."""
    return Arg(c_name, VALUE, IN, name=name, default=default, convert=_integer)


def flag(c_name, *, name=None, default=REQUIRED):
    """A C ``bool`` given as a bool (``numpy.bool_`` too)."""
    return Arg(c_name, VALUE, IN, name=name, default=default, convert=_flag)


def string(c_name, *, name=None, default=REQUIRED):
    """A ``const char *`` given as a ``str`` without NUL characters (passed UTF-8 encoded)."""
    return Arg(c_name, STRING, IN, name=name, default=default, convert=_string)


def option(name, convert, *, default=REQUIRED):
    """A Python-only argument named ``name``: no C parameter, converted by
    ``convert(value, name)`` (which raises AclTypeError/AclArgumentError naming it) and read
    by the declaration's rules as ``a.<name>`` (an output's ``dtype(a)``, ``check(a)``, the
    reference)."""
    return Arg(name, OPTION, IN, name=name, default=default, convert=convert)


def format_option(name, formats, *, default):
    """An :func:`option` naming a tensor's layout, one of ``formats`` (names of
    :data:`acl_py.tensor.FORMATS`, e.g. ``("NCHW", "NHWC")``): ``a.<name>`` is the name, and
    a :func:`tensor` declared with ``format=name`` goes to phase one in that aclFormat."""
    def convert(v, argument):
        if type(v) is not str:
            raise AclTypeError(argument, f"expected a str ({', '.join(formats)}), got "
                               f"{type(v).__name__}")
        if v not in formats:
            raise AclArgumentError(argument, f"{v!r} is not one of {', '.join(formats)}")
        return v
    return option(name, convert, default=default)


def dtype_option(name, dtypes, *, default):
    """An :func:`option` naming an output's dtype, one of ``dtypes`` (names), given as
    anything :func:`acl_py.dtypes.element_type` takes (``np.int8``,
    ``ml_dtypes.float8_e4m3fn``, ``"float8_e5m2"``, ``acl_py.dtypes.HIFLOAT8``,
    ``acl_py.dtypes.ACL_INT4``, ``"int4"``); ``a.<name>`` is the NumPy dtype, or the
    :class:`~acl_py.dtypes.AclDtype` for ``"hifloat8"`` / ``"int4"``. Which of them the part
    computes is the declaration's ``check``'s to say."""
    seen = {}     # given value -> its dtype: an option is converted on every call

    def convert(v, argument):
        try:
            dt = seen.get(v)
        except TypeError:    # unhashable: not a dtype, as_dtype says why
            dt = None
        if dt is not None:
            return dt
        dt = _dt.element_type(v, argument)
        if dt not in _dtype_set(dtypes):
            raise AclTypeError(argument, f"dtype {_dtype_name(dt)} must be one of "
                               f"{', '.join(dtypes)}")
        if len(seen) < 64:
            seen[v] = dt
        return dt
    return option(name, convert, default=default)


# ---- rules the device checks at a later stage ----------------------------------------------

# The status code of the refusal a DeviceTensor call's diagnosis is explaining
# (Declared._diagnose), None outside one: what staged() reads.
_diagnosing: "contextvars.ContextVar[int | None]" = contextvars.ContextVar("acl_py_diagnosing",
                                                                          default=None)


def staged(codes, argument, problem, error=AclArgumentError):
    """For a declaration's ``check``: a broken rule the vendor refuses with ``codes`` only
    (status codes: a rule its tiling or an L0 op checks, which the device reaches after the
    op_api's checks, e.g. ``(561103,)``; the declaration lists them, ``staged_codes=``).
    Raises ``error(argument, problem, codes=codes)``, as a plain rule's ``raise`` does, except
    while a DeviceTensor call's refusal with a code outside ``codes`` is being diagnosed: the
    device returned before reaching this rule, so it returns and the check goes on to the rule
    that refusal is about (and if none breaks, the refusal is raised as it is). Only for rules
    nothing after them in the check relies on."""
    code = _diagnosing.get()
    if code is None or code in codes:
        raise error(argument, problem, codes=codes)


def diagnosing():
    """For a declaration's ``check``: the status code of the phase-one refusal a DeviceTensor
    call's diagnosis is explaining, None outside one (a NumPy call's checks, which all run
    before any C call). A check whose rules the op_api reaches only on some parts (after its
    part check: InstanceNorm's shapes) stops before them in a diagnosis on another part."""
    return _diagnosing.get()


# ---- dtypes --------------------------------------------------------------------------------

_NAMED = {}   # dtype name -> np.dtype (bfloat16 from ml_dtypes, loaded on first use)
_F32 = np.dtype(np.float32)
_NULL = ffi.NULL


def _np_dtype(name):
    dt = _NAMED.get(name)
    if dt is None:
        # ml_dtypes' names (bfloat16, float8_e4m3fn) load it; "hifloat8" and "int4" are
        # acl_py.dtypes' AclDtypes
        dt = _NAMED[name] = _dt.element_type(name)
    return dt


_dtype_name = _dt.dtype_name


_SETS = {}   # tuple of dtype names -> frozenset of np.dtype (membership is a hash lookup)


def _dtype_set(names):
    s = _SETS.get(names)
    if s is None:
        s = _SETS[names] = frozenset(_np_dtype(n) for n in names)
    return s


def _host_form(dt, kind):
    """For an output message: how a NumPy array holds a HIFLOAT8 / INT4 output."""
    if kind is np.ndarray and type(dt) is _dt.AclDtype:
        return f": {dt.name} held as {dt.host.name}"
    return ""


# ---- value conversion ----------------------------------------------------------------------

def _int_values(v, name):
    t = type(v)
    if t is tuple or t is list:
        for d in v:   # the common case: plain non-negative ints
            if type(d) is not int or d < 0:
                break
        else:
            return tuple(v)
    elif t is int and v >= 0:
        return (v,)
    elif isinstance(v, IntArray):
        return v.values
    if isinstance(v, (str, bytes)):
        raise AclTypeError(name, "expected a sequence of ints")
    return as_dims(v, name)


def _bool_values(v, arg):
    n, name = arg.length, arg.py
    t = type(v)
    if (t is tuple or t is list) and (n is None or len(v) == n):
        for b in v:
            if type(b) is not bool:
                break
        else:
            return tuple(v)
    what = f"a sequence of {n} bools" if n is not None else "a sequence of bools"
    if isinstance(v, (str, bytes)):
        raise AclTypeError(name, f"expected {what}")
    try:
        items = tuple(v)
    except TypeError:
        raise AclTypeError(name, f"expected {what}, got {type(v).__name__}") from None
    if n is not None and len(items) != n:
        meaning = f" ({', '.join(arg.items)})" if arg.items else ""
        raise AclArgumentError(name, f"needs {n} entries{meaning}, got {len(items)}")
    for i, b in enumerate(items):
        if not isinstance(b, (bool, np.bool_)):
            raise AclTypeError(f"{name}[{i}]", f"expected a bool, got {type(b).__name__} {b!r}")
    return tuple(bool(b) for b in items)


def _flag(v, name):
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    raise AclTypeError(name, f"expected a bool, got {type(v).__name__}")


def _double(v, name):
    if type(v) is float:
        return v
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(
            v, (bool, np.bool_)):
        return float(v)
    raise AclTypeError(name, f"expected a real number, got {type(v).__name__}")


_INT64 = (-2 ** 63, 2 ** 63 - 1)


def _integer(v, name):
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        v = int(v)
        if _INT64[0] <= v <= _INT64[1]:
            return v
        raise AclArgumentError(name, f"{v} does not fit an int64")
    raise AclTypeError(name, f"expected an int, got {type(v).__name__}")


def _string(v, name):
    if not isinstance(v, str):
        raise AclTypeError(name, f"expected a str, got {type(v).__name__}")
    c_string(v, name)   # no NUL inside
    return str(v)


class Bound:
    """The arguments of one call by Python name, converted (``a.normalized_shape`` is a tuple
    of ints, ``a.eps`` a float), as attributes (``a.input``) or items (``a["input"]``); what
    ``check``, ``shape``, ``dtype`` and ``when`` read. Each declared operator has its own
    subclass, a named tuple of its inputs (:func:`_bound_type`): made in one step per call."""

    __slots__ = ()
    _fields: tuple

    def __getitem__(self, name):
        return getattr(self, name)

    def keys(self):
        return self._fields


# A Bound is made from a list of its values in one step (a named tuple's own constructor takes
# them as separate arguments, and costs more).
_new_tuple = tuple.__new__


def _bound_type(names):
    return type("Bound", (Bound, namedtuple("Bound", names)), {"__slots__": ()})


def _kind_name(kind):
    return "acl_py.DeviceTensor" if kind is DeviceTensor else "numpy.ndarray"


# ---- the declared operator -------------------------------------------------------------------

# Every declared operator by its name without the "aclnn" prefix ("RmsNorm"), in the order the
# operator modules declared them (importing acl_py.ops imports them all). A Declared enters
# itself when made; a variant made for a test passes register=False and may replace or add
# an entry for the test's duration (monkeypatch.setitem). acl-py smoke runs every entry's
# smoke cases.
DECLARED: "dict[str, Declared]" = {}

# One output judged against the reference (Declared.check_outputs): the largest absolute error
# and the worst error ratio (<= 1 passes; inf for a NaN, or when ``problem`` says why the
# output could not be compared: missing, not requested, of another size).
OutputError = namedtuple("OutputError", "name max_abs_error error_ratio problem")

# An output the part does not write (Declared.check_outputs): not compared, ``reason`` says why.
OutputNotWritten = namedtuple("OutputNotWritten", "name reason")


class Part(namedtuple("Part", "name npu_arch cores")):
    """The part a device is, as an output's ``unwritten`` predicate reads it: its name
    (``aclrtGetSocName``), NPU architecture (``aclrtGetDeviceInfo``: 2002 the Atlas inference
    series, 2201 Atlas A2/A3, 1001 the Atlas training series, 3510 Ascend 950) and ``cores``,
    its AI cores plus its vector cores (a vector core count of 0 counts the AI cores again):
    the core count the vendor's tilings divide work over (``totalCoreNum``)."""

    __slots__ = ()

    @property
    def inference(self) -> bool:
        """An Atlas inference part (DAV_2002, ``__CCE_AICORE__`` 200)."""
        return self.npu_arch == 2002

    @property
    def arch3510(self) -> bool:
        """Ascend 950 (DAV_3510), where some op_apis check more than elsewhere (the vendor's
        ``IsArch3510``)."""
        return self.npu_arch == 3510


_PARTS: "dict[int, Part]" = {}   # device id -> its Part (a device's part never changes)


def part_of(device=None) -> Part:
    """The :class:`Part` device ``device`` (default: the current one) is; read once per
    device."""
    dev = _device.current_device_id() if device is None else _device.resolve_device(device)
    p = _PARTS.get(dev)
    if p is None:
        from ..soc import soc_name
        at = _device.Device(dev).attributes
        p = _PARTS[dev] = Part(soc_name(), at.npu_arch,
                               at.ai_cores + (at.vector_cores or at.ai_cores))
    return p


class Declared(Operator):
    """An operator as declared (see the module doc): a two-phase
    :class:`~acl_py.ops.Operator` (``launch``, ``prepare`` on C-level arguments) whose
    parameters are :class:`Arg` s, plus the Python-level call, plan and reference built from
    them. ``inputs`` / ``outputs``: the Python-side parameters and the outputs, in order.
    ``smoke_cases``: the cases every ``acl-py smoke`` run checks, ``(name, make)`` pairs with
    ``make()`` giving NumPy inputs in declaration order (small: the quick run takes seconds);
    ``smoke_full_cases``: more (large shapes), for the full run only. Names are unique within
    the declaration. ``register``: enter :data:`DECLARED` under :attr:`short_name` (a
    second declaration of that name raises ValueError; a test's variant passes False).
    ``parts``: a predicate of the part's name (``aclrtGetSocName``), false where the vendor has
    no kernel for the operator (:meth:`runs_on`; ``acl-py smoke`` leaves its cases out
    there); None: every part. ``rule_codes``: the codes besides 161001/161002/561002 whose
    refusal of a DeviceTensor call runs the diagnosis; ``staged_codes``: every code the
    check's :func:`staged` rules state. The checks run in the op_api's order: ``precheck(a)``
    (rules it checks before any dtype: InstanceNorm's dataFormat), the inputs' dtypes, with
    ``out_dtypes_first`` the given ``out=`` entries' dtypes (an op_api checking every
    tensor's dtype before any shape: LayerNormBackward's, InstanceNorm's), ``check(a)``,
    then the ``out=`` entries (kinds, dtypes, shapes)."""

    __slots__ = ("args", "inputs", "outputs", "check", "reference", "error_scale",
                 "precheck", "out_dtypes_first",
                 "smoke_cases", "smoke_full_cases", "rule_codes", "staged_codes", "parts",
                 "_first", "_first_index", "_into",
                 "_dtype_order", "_out_names", "_c_order", "_bound", "_in_steps", "_out_steps",
                 "_unwritten", "_formatted")

    def __init__(self, name, args, *, check=None, reference=None, error_scale=None,
                 smoke_cases=(), smoke_full_cases=(), rule_codes=(), staged_codes=(),
                 parts=None, register=True, precheck=None, out_dtypes_first=False):
        self.args = tuple(args)
        self.precheck = precheck
        self.out_dtypes_first = out_dtypes_first
        self.parts = parts
        # status codes outside OperatorParameterError's (161001, 161002, 561002) the
        # operator's phase one refuses its arguments with (its vendor docs): such a refusal of
        # a DeviceTensor call also runs the Python checks that name the argument
        self.rule_codes = frozenset(rule_codes)
        # every code its check's staged() rules state (the tiling's, an L0 op's), for the
        # tests to hold against the codes its phase one returns
        self.staged_codes = frozenset(staged_codes)
        # phase one's parameters: every argument but the outputs written into an input and
        # the options
        super().__init__(name, [a for a in self.args
                                if a.into is None and a.kind is not OPTION])
        self.inputs = tuple(a for a in self.args if a.role is IN)
        self.outputs = tuple(a for a in self.args if a.role is OUT)
        for o in self.outputs:
            if o.into is not None and not any(a.py == o.into and a.written
                                              for a in self.inputs):
                raise ValueError(f"{name}: output {o.py!r} is written into {o.into!r}, which "
                                 f"is not an input declared written=True")
        # per output, the index of the input it is written into (None: an output of its own)
        self._into = tuple(None if o.into is None else
                           next(i for i, a in enumerate(self.inputs) if a.py == o.into)
                           for o in self.outputs)
        self.check = check
        self.reference = reference
        self.error_scale = error_scale
        self.smoke_cases = tuple(smoke_cases)
        self.smoke_full_cases = tuple(smoke_full_cases)
        names = [c[0] for c in self.smoke_cases + self.smoke_full_cases]
        if len(set(names)) != len(names):
            raise ValueError(f"{name}: smoke case names must be unique, got {names}")
        # the tensor whose kind (NumPy or device) and device every other one must share:
        # "input" if there is one, else the first required tensor
        required = [a for a in self.inputs if a.kind is TENSOR and not a.optional]
        self._first = next((a for a in required if a.py == "input"), required[0])
        self._first_index = self.inputs.index(self._first)
        # dtype checks: the tensors others are compared with ("like") first
        typed = [a for a in self.inputs if a.kind is TENSOR and a.dtypes is not None]
        self._dtype_order = tuple([a for a in typed if a.like is None] +
                                  [a for a in typed if a.like is not None])
        self._out_names = tuple(f"out[{k}] ({o.py})" for k, o in enumerate(self.outputs))
        # Phase one's order as indexes into (inputs' C values + outputs'), None when the
        # outputs come last (the usual layout: no reordering per call).
        own_outputs = tuple(o for o in self.outputs if o.into is None)
        where = {id(a): i for i, a in enumerate(self.inputs + own_outputs)}
        order = tuple(where[id(a)] for a in self.params)
        self._c_order = None if order == tuple(range(len(order))) else order
        self._bound = _bound_type([a.py for a in self.inputs])
        self._in_steps = tuple((i, a, a.kind) for i, a in enumerate(self.inputs))
        self._out_steps = tuple((k, o, o.when, self._out_names[k], self._into[k])
                                for k, o in enumerate(self.outputs))
        # the outputs a part may leave unwritten: (index, predicate); most operators have none
        self._unwritten = tuple((k, o.unwritten) for k, o in enumerate(self.outputs)
                                if o.unwritten is not None)
        # the input tensors phase one gets in the aclFormat an option names (tensor(format=))
        self._formatted = tuple((i, arg) for i, arg in enumerate(self.inputs)
                                if arg.kind is TENSOR and arg.format is not None)
        if register:
            if self.short_name in DECLARED:
                raise ValueError(f"{name}: {self.short_name!r} is declared already "
                                 f"({DECLARED[self.short_name]!r}); a variant passes "
                                 f"register=False")
            DECLARED[self.short_name] = self

    def __repr__(self):
        return f"<acl_py.ops.Declared {self.name}>"

    def runs_on(self, soc):
        """Whether the part named ``soc`` has a kernel for the operator (``parts``); an
        unknown part (None) is taken to have one."""
        return self.parts is None or soc is None or bool(self.parts(soc))

    @property
    def short_name(self):
        """The C name without its ``aclnn`` prefix: ``RmsNorm``."""
        return self.name[5:] if self.name.startswith("aclnn") else self.name

    def argument_name(self, param):
        """The name :meth:`Plan.rebind` takes for ``param``: its Python name (``weight``,
        ``out``, ``grad_input``)."""
        return param.py

    def not_written(self, a, part, out=None):
        """Per output, why ``part`` (a :class:`Part`) does not write it for checked
        arguments ``a`` (a :class:`Bound`) and ``out=`` entries ``out`` (None: the
        defaults), None where it does (or is not requested); None when every output is
        written."""
        if not self._unwritten:
            return None
        shapes = self._out_shapes(a, (None,) * len(self.outputs) if out is None else out)
        why = [None] * len(self.outputs)
        for k, unwritten in self._unwritten:
            when = self.outputs[k].when
            if when is None or when(a):
                why[k] = unwritten(a, part, shapes)
        return tuple(why) if any(w is not None for w in why) else None

    def unwritten_outputs(self, values, part=None, out=None):
        """Per output, why the part does not write it for NumPy ``values`` (declaration
        order) and ``out=`` entries ``out`` (their shapes; None: the defaults), None where it
        does: the outputs a call returns as None for that reason. ``part``: a :class:`Part`
        (default: the current device's, :func:`part_of`)."""
        a = self.bind(values, np.ndarray)
        why = self.not_written(a, part_of() if part is None else part, out)
        return why or (None,) * len(self.outputs)

    # ---- checks ----

    def bind(self, values, kind, out=None, dev=None):
        """Checks the Python inputs (in declaration order) and returns them as a
        :class:`Bound`: kinds, conversions, ``precheck``, dtypes, with ``out_dtypes_first``
        the dtypes of ``out=`` entries ``out`` (of a call on device ``dev``, None: the
        current one), then the operator's ``check``."""
        py = list(values)
        if len(py) != len(self.inputs):     # a Bound is made from the list as it is
            raise self._count_error(py)
        for i, (arg, v) in enumerate(zip(self.inputs, values)):
            name = arg.py
            if v is REQUIRED:
                raise AclTypeError(name, f"{self.name}: missing argument")
            k = arg.kind
            if k is TENSOR:
                if v is None:
                    if not arg.optional:
                        raise self._value_kind_error(arg, v, kind)
                elif type(v) is not kind and not isinstance(v, kind):
                    raise self._value_kind_error(arg, v, kind)
                elif kind is np.ndarray:
                    v = _dt.native(v)   # copied to the device in its byte order anyway
            elif k is INT_ARRAY:
                v = _int_values(v, name)
            elif k is BOOL_ARRAY:
                v = None if v is None and arg.optional else _bool_values(v, arg)
            else:
                v = arg.convert(v, name)
            py[i] = v
        a = _new_tuple(self._bound, py)
        if self.precheck is not None:
            self.precheck(a)
        for arg in self._dtype_order:
            t = a[arg.py]
            if t is not None:
                self._check_dtype(arg, t.dtype, a)
        if out is not None and self.out_dtypes_first:
            self._check_out_dtypes(out, a, kind, dev)
        if self.check is not None:
            self.check(a)
        return a

    def _check_out_dtypes(self, out, a, kind, dev):
        """The dtypes of the given ``out=`` entries of requested outputs (``out_dtypes_first``);
        entries of another kind, and an ``out`` of the wrong form, are left to
        :meth:`_check_out`."""
        if isinstance(out, (str, bytes)) or not hasattr(out, "__len__") or \
                len(out) != len(self.outputs):
            return
        for k, (o, spec) in enumerate(zip(out, self.outputs)):
            if o is None or spec.into is not None or (spec.when is not None and
                                                      not spec.when(a)):
                continue
            if type(o) is kind or isinstance(o, kind):
                self._check_out_dtype(spec, self._out_names[k], o, a, kind, dev)

    def _count_error(self, values):
        return AclArgumentError("values", f"{self.name} takes {len(self.inputs)} inputs "
                                f"({', '.join(a.py for a in self.inputs)}), got {len(values)}")

    def _value_kind_error(self, arg, v, kind):
        if v is None:
            return AclTypeError(arg.py, f"expected {_kind_name(kind)}, got None")
        if arg is self._first:
            return AclTypeError(arg.py, f"expected a numpy.ndarray or an acl_py.DeviceTensor, "
                                f"got {type(v).__name__}")
        return AclTypeError(arg.py, f"expected {'None or ' if arg.optional else ''}"
                            f"{_kind_name(kind)} (like {self._first.py}), got "
                            f"{type(v).__name__}")

    def _check_dtype(self, arg, dt, a):
        allowed = arg.dtypes
        if dt not in _dtype_set(allowed):
            raise AclTypeError(arg.py, f"dtype {_dtype_name(dt)} is not supported by "
                               f"{self.name} ({', '.join(allowed)})")
        if arg.like is not None:
            want = a[arg.like].dtype
            if dt is not want and dt != want and not (arg.or_float32 and dt == _F32) and \
                    not (arg.or_wider and dt.itemsize >= want.itemsize):
                name, wname = _dtype_name(dt), _dtype_name(want)
                if arg.or_wider:
                    rule = f"at least as wide as {arg.like}'s dtype {wname}"
                elif not arg.or_float32:
                    rule = f"{arg.like}'s dtype {wname}"
                elif wname == "float32":
                    rule = "float32"
                else:
                    rule = f"{arg.like}'s dtype {wname} or float32"
                raise AclTypeError(arg.py, f"dtype {name} must be {rule}")

    def _check_out(self, out, a, kind, dev):
        """The ``out=`` tuple, each entry checked (None for unrequested outputs) for a call
        on device ``dev``."""
        n = len(self.outputs)
        if isinstance(out, (str, bytes)) or not hasattr(out, "__len__") or len(out) != n:
            raise AclArgumentError("out", f"expected a tuple of {n} entries "
                                   f"({', '.join(o.py for o in self.outputs)}), each None or "
                                   f"a preallocated output")
        res = []
        for k, (o, spec) in enumerate(zip(out, self.outputs)):
            if o is None or (spec.when is not None and not spec.when(a)):
                res.append(None)
                continue
            res.append(self._check_out_entry(k, o, a, kind, dev, out))
        return res

    def _out_shapes(self, a, out):
        """The shape phase one receives for each requested output, by Python name: the
        given ``out=`` entry's (a tensor or array of the right kind), else the default."""
        shapes = {}
        for spec, o in zip(self.outputs, out):
            if spec.when is None or spec.when(a):
                shape = getattr(o, "shape", None)
                shapes[spec.py] = shape if isinstance(shape, tuple) else spec.shape(a)
        return shapes

    def _check_out_entry(self, k, o, a, kind, dev, out, name=None):
        """``out[k]``, a given entry of a requested output of a call on device ``dev``,
        checked: not an output written in place, its kind, dtype, shape (against the other
        entries of ``out``, the call's: see :meth:`_out_shapes`) and (NumPy) writability.
        Errors name ``name`` (default ``out[k] (its name)``)."""
        spec = self.outputs[k]
        name = name or self._out_names[k]
        if spec.into is not None:
            raise AclArgumentError(name, f"must be None: {spec.py} is written in place "
                                   f"into {spec.into}")
        if type(o) is not kind and not isinstance(o, kind):
            raise AclTypeError(name, f"expected None or {_kind_name(kind)} (like "
                               f"{self._first.py}), got {type(o).__name__}")
        self._check_out_dtype(spec, name, o, a, kind, dev)
        if o.shape != spec.shape(a):
            rule = (f"!= {spec.shape(a)} (the shape {spec.py} has for these arguments)"
                    if spec.fits is None else
                    spec.fits(a, o.shape, part_of(dev), self._out_shapes(a, out)))
            if rule is not None:
                _broken(self._later(spec, a, dev, "shape", o.shape), name,
                        f"shape {o.shape} {rule}")
        if kind is np.ndarray and not o.flags.writeable:
            raise AclArgumentError(name, "array is read-only")
        if spec.int4_as_int32 is not None and kind is DeviceTensor and self._as_words(
                spec, o, dev):
            rule = o.int4_words_rule()
            if rule is not None:
                raise AclArgumentError(name, f"{rule}: {part_of(dev).name}'s op_api takes "
                                       f"int4 {spec.py} as int32 words only, eight to a word")
        return o

    def _check_out_dtype(self, spec, name, o, a, kind, dev):
        """A given ``out=`` entry ``o`` (named ``name``) of output ``spec``: its dtype."""
        if kind is DeviceTensor:
            dt = o.element_type     # a HIFLOAT8 / INT4 tensor's, not its bytes' uint8
        else:
            # A byte-swapped NumPy output is written in its own order (see _host_call).
            dt = o.dtype if o.dtype.isnative else o.dtype.newbyteorder("=")
        dtypes = spec.out_dtypes(a, dev)
        if dtypes is not None:
            if dt not in _dtype_set(dtypes):
                _broken(self._later(spec, a, dev, "dtype", dt), name,
                        f"dtype {_dtype_name(dt)} is not supported by {self.name} "
                        f"({', '.join(dtypes)})", AclTypeError)
        else:
            want = spec.dtype(a)
            if kind is np.ndarray and type(want) is _dt.AclDtype:
                want = want.host    # an array holds the host form (HIFLOAT8 codes, INT4 int8)
            if dt is not want and dt != want:
                _broken(self._later(spec, a, dev, "dtype", dt), name,
                        f"dtype {_dtype_name(dt)} != {_dtype_name(want)} (the dtype {spec.py} "
                        f"has for these arguments{_host_form(spec.dtype(a), kind)})",
                        AclTypeError)

    @staticmethod
    def _later(spec, a, dev, rule, value):
        """The codes of output ``spec``'s broken ``out=`` ``rule`` where the device refuses it
        at a later stage than the op_api's checks (``output(later=)``), else None."""
        return None if spec.later is None else spec.later(a, part_of(dev), rule, value)

    @staticmethod
    def _as_words(spec, t, dev):
        """Whether output ``spec``'s tensor ``t`` goes to phase one on device ``dev`` as INT32
        words (``output(int4_as_int32=...)``): an INT4 tensor where the part's op_api takes
        that form only."""
        return (spec.int4_as_int32 is not None and t.element_type is _dt.INT4
                and spec.int4_as_int32(part_of(dev)))

    @classmethod
    def _phase_one_form(cls, spec, t, dev):
        """The tensor phase one is given for output ``spec``'s tensor ``t``: ``t``, or its
        INT32 words (:meth:`_as_words`) when its bytes are whole words (otherwise ``t``, for
        phase one to refuse)."""
        if cls._as_words(spec, t, dev) and t.int4_words_rule() is None:
            return t.int4_words()
        return t

    def _check_device(self, a, outs, dev):
        for arg in self.inputs:
            if arg.kind is TENSOR:
                t = a[arg.py]
                if t is not None and t.allocation.device != dev:
                    raise AclArgumentError(arg.py, f"tensor is on device {t.allocation.device}"
                                           f", {self._first.py} on device {dev}")
        for name, t in zip(self._out_names, outs):
            if t is not None and t.allocation.device != dev:
                raise AclArgumentError(name, f"tensor is on device {t.allocation.device}, "
                                       f"{self._first.py} on device {dev}")

    # ---- arguments of the C call ----

    def _requested(self, a):
        return tuple(o.when is None or o.when(a) for o in self.outputs)

    def _c_args(self, a, outs, dev):
        """A plan's phase-one arguments in declaration order, over checked arguments ``a``
        and outputs ``outs`` (None: NULL; an INT4 one in the form the part's op_api takes:
        :meth:`_phase_one_form`) on device ``dev``: its own argument arrays, which its
        executor keeps for its whole life."""
        args = []
        k = 0
        for arg in self.args:
            if arg.role is OUT:
                if arg.into is None:
                    t = outs[k]
                    args.append(t if t is None else self._phase_one_form(arg, t, dev))
                k += 1
            elif arg.kind is INT_ARRAY:
                args.append(IntArray(a[arg.py]))
            elif arg.kind is BOOL_ARRAY:
                args.append(None if a[arg.py] is None else BoolArray(a[arg.py]))
            elif arg.format is not None and a[arg.py] is not None:
                args.append(a[arg.py].with_format(a[arg.format]))
            elif arg.kind is not OPTION:
                args.append(a[arg.py])
        return tuple(args)

    def _device_outputs(self, a, out, dev, sst, why=None):
        outs = []
        for k, spec in enumerate(self.outputs):
            if spec.when is not None and not spec.when(a):
                outs.append(None)
            elif spec.into is not None:
                outs.append(a[spec.into])
            elif out is not None and out[k] is not None and (why is None or why[k] is None):
                outs.append(out[k])
            else:
                outs.append(DeviceTensor.new_output(spec.shape(a), spec.dtype(a), dev, sst))
        return tuple(outs)

    # ---- the calls ----

    def call(self, values, *, out=None, stream=None):
        """The operator on NumPy arrays or DeviceTensors (see the module doc). ``values``:
        the Python inputs in declaration order. Returns the outputs (None where not
        requested, or not written by the device's part: ``output(unwritten=...)``)."""
        if len(values) != len(self.inputs):
            raise self._count_error(values)
        first = values[self._first_index]
        if type(first) is DeviceTensor or isinstance(first, DeviceTensor):
            dev = first.allocation.device
            return self._run(values, out, dev, _stream.state_for(stream, dev))
        if isinstance(first, np.ndarray):
            return self._host_call(values, out, stream)
        raise self._value_kind_error(self._first, first, DeviceTensor)

    def _run(self, values, out, dev, sst):
        """Converts the DeviceTensor call's arguments and launches it on ``sst``; returns the
        outputs. What only Python can check is checked here: kinds, conversions, closed
        tensors, one device. The operator's rules (dtypes, shapes) are phase one's; when it
        refuses, :meth:`_diagnose` runs the Python checks to name the argument."""
        py = list(values)       # the Bound's values, conversions stored below
        cvals = list(values)    # becomes phase one's C values, declaration order
        allocs = []             # the memory the launch uses
        held = []               # cached argument arrays, held until phase one has read them
        for i, arg, k in self._in_steps:
            v = cvals[i]
            if k is TENSOR:
                if type(v) is DeviceTensor or isinstance(v, DeviceTensor):
                    al = v.allocation
                    h = v.cached_handle
                    if h is None or al.closed:
                        h = v.handle    # made now, or the error for a closed tensor
                    if al.device != dev:
                        raise self._device_error(arg.py, al.device, dev)
                    allocs.append(al)
                    cvals[i] = h
                elif v is None and arg.optional:
                    cvals[i] = _NULL
                else:
                    raise self._value_kind_error(arg, v, DeviceTensor)
            elif k is VALUE:
                if type(v) is not arg.value_type:
                    py[i] = cvals[i] = arg.convert(self._given(v, arg), arg.py)
            elif k is OPTION:   # no C value: phase one's order (_c_order) leaves it out
                py[i] = arg.convert(self._given(v, arg), arg.py)
            elif k is STRING:
                py[i] = v = arg.convert(self._given(v, arg), arg.py)
                cvals[i] = c_string(v, arg.py)   # cffi passes it NUL-terminated
            elif v is None and arg.optional:    # an optional array: NULL
                cvals[i] = _NULL
            else:
                e = self._array(arg, v)
                held.append(e)
                py[i] = e[0].values
                cvals[i] = e[1]
        a = _new_tuple(self._bound, py)
        why = None
        if self._unwritten:
            if out is not None and (type(out) is not tuple or len(out) != len(self.outputs)):
                out = self._out_entries(out)
            why = self.not_written(a, part_of(dev), out)
        # the views handed to phase one in place of the caller's tensors, closed once it has
        # read them: INT4 outputs' INT32 words (see output()), inputs in another aclFormat
        words = []
        try:
            for i, arg in self._formatted:
                t = py[i]
                if t is not None:
                    t = t.with_format(a[arg.format])
                    words.append(t)
                    cvals[i] = t.handle
            outs = self._outputs(a, values, out, dev, sst, cvals, allocs, why, words)
            try:
                self.enqueue(cvals if self._c_order is None else
                             [cvals[i] for i in self._c_order], allocs, dev, sst)
                if why is not None:
                    outs = self._drop_unwritten(outs, why)
            except AclError as e:
                if not (isinstance(e, OperatorParameterError) or e.code in self.rule_codes):
                    raise
                # New outputs go back now, not when the caller drops the traceback (whose
                # frames hold this one's locals).
                outs = None
                self._diagnose(values, out, DeviceTensor, dev, e, e.code)
                raise
        finally:
            for w in words:
                w.close()
        return outs

    @staticmethod
    def _drop_unwritten(outs, why):
        """``outs`` with None for the outputs the part does not write (``why``), whose
        scratch tensors are closed (stream-ordered: after the launch that uses them)."""
        res = []
        for t, w in zip(outs, why):
            if w is not None and t is not None:
                t.close()
                t = None
            res.append(t)
        return tuple(res)

    def _outputs(self, a, values, out, dev, sst, cvals, allocs, why=None, words=None):
        """The outputs of a DeviceTensor call (given in ``out=`` or new), their C values
        appended to ``cvals`` and their memory to ``allocs``. An output the part does not
        write (``why[k]`` not None) is a new scratch tensor whatever ``out=`` gives: the
        caller's tensor is left as it was (a device may copy undefined contents out). An INT4
        output the part's op_api takes as INT32 words (``output(int4_as_int32=...)``) is
        handed over as such a view, appended to ``words`` (the caller closes them)."""
        n = len(self.outputs)
        if out is not None and (type(out) is not tuple or len(out) != n):
            out = self._out_entries(out)
        outs = []
        for k, spec, when, name, into in self._out_steps:
            if when is not None and not when(a):
                outs.append(None)
                if into is None:    # an output written in place has no C value of its own
                    cvals.append(_NULL)
                continue
            o = None if out is None else out[k]
            if into is not None:    # the input itself (its C value is the input's)
                if o is not None:
                    raise AclArgumentError(name, f"must be None: {spec.py} is written in "
                                           f"place into {spec.into}")
                outs.append(values[into])
                continue
            if why is not None and why[k] is not None:
                # Phase one will not see the caller's entry: checked here as a NumPy
                # call's are, then left as it was.
                if o is not None:
                    self._check_out_entry(k, o, a, DeviceTensor, dev, out)
                    if o.allocation.device != dev:
                        raise self._device_error(name, o.allocation.device, dev)
                o = None
            if o is None:
                try:
                    o = DeviceTensor.new_output(spec.shape(a), spec.dtype(a), dev, sst)
                except AclError as e:
                    # Arguments the library would refuse may ask for absurd sizes: name them.
                    self._diagnose(values, out, DeviceTensor, dev, e)
                    raise
                allocs.append(o.allocation)
                if spec.int4_as_int32 is not None and o.element_type is _dt.INT4:
                    cvals.append(self._words_handle(spec, o, dev, words))
                else:
                    cvals.append(o.cached_handle)
                outs.append(o)
                continue
            if type(o) is not DeviceTensor and not isinstance(o, DeviceTensor):
                raise AclTypeError(name, f"expected None or "
                                   f"acl_py.DeviceTensor (like {self._first.py}), got "
                                   f"{type(o).__name__}")
            al = o.allocation
            h = o.cached_handle
            if h is None or al.closed:
                h = o.handle
            if al.device != dev:
                raise self._device_error(name, al.device, dev)
            allocs.append(al)
            if spec.int4_as_int32 is not None and o.element_type is _dt.INT4:
                h = self._words_handle(spec, o, dev, words)
            cvals.append(h)
            outs.append(o)
        return tuple(outs)

    def _words_handle(self, spec, o, dev, words):
        """The aclTensor phase one gets for INT4 output ``o`` of ``spec``:
        :meth:`_phase_one_form`'s, a new view's appended to ``words``."""
        w = self._phase_one_form(spec, o, dev)
        if w is o:
            return o.handle
        words.append(w)
        return w.handle

    def _array(self, arg, v):
        """The cached ``(IntArray or BoolArray, handle, session)`` of an array argument."""
        if arg.kind is INT_ARRAY:
            if type(v) is tuple:
                for x in v:     # the common case: a tuple of plain non-negative ints
                    if type(x) is not int or x < 0:
                        break
                else:
                    return shared_array(IntArray, v)
            return shared_array(IntArray, _int_values(self._given(v, arg), arg.py))
        if type(v) is tuple and (arg.length is None or len(v) == arg.length):
            for x in v:
                if type(x) is not bool:
                    break
            else:
                return shared_array(BoolArray, v)
        return shared_array(BoolArray, _bool_values(self._given(v, arg), arg))

    def _given(self, v, arg):
        if v is REQUIRED:
            raise AclTypeError(arg.py, f"{self.name}: missing argument")
        return v

    def _out_entries(self, out):
        n = len(self.outputs)
        if isinstance(out, (str, bytes)) or not hasattr(out, "__len__") or len(out) != n:
            raise AclArgumentError("out", f"expected a tuple of {n} entries "
                                   f"({', '.join(o.py for o in self.outputs)}), each None or "
                                   f"a preallocated output")
        return tuple(out)

    @staticmethod
    def _staged_dtype(spec, o, a):
        """The element type of the device tensor staging NumPy ``out=`` entry ``o``: the
        output's HIFLOAT8 / INT4 (``o`` holds its host form), else ``o``'s dtype."""
        want = spec.dtype(a) if spec.dtypes is None else None
        return want if type(want) is _dt.AclDtype else o.dtype.newbyteorder("=")

    def _device_error(self, name, device, dev):
        return AclArgumentError(name, f"tensor is on device {device}, {self._first.py} on "
                                f"device {dev}")

    def _diagnose(self, values, out, kind, dev, refusal, staged_code=None):
        """After the library refused a call (``refusal``, its typed error): the Python
        checks, which name the argument. A problem found is raised as its
        AclTypeError/AclArgumentError carrying the refusal's status code and message (and
        chained to it); if they find nothing, this returns and the caller raises the
        refusal as it is (a rule only the library knows). ``staged_code``: phase one's
        status, whose stage the diagnosis respects: a rule stating other codes
        (:func:`staged`: the tiling's, which the device reaches only after the op_api's
        checks) is passed over, and the checks go on to one that may explain it; None (a
        refusal before phase one, e.g. an output's allocation): any rule explains it."""
        token = _diagnosing.set(staged_code)
        try:
            a = self.bind(values, kind, out, dev)
            outs = self._check_out(out, a, kind, dev) if out is not None else None
            if kind is DeviceTensor:
                self._check_device(a, outs or (), dev)
        except AclArgumentError as e:
            if not e.explains(staged_code):
                return      # a rule of another stage raised without staged(): not this one
            e.refused(refusal)
            raise e from refusal
        finally:
            _diagnosing.reset(token)

    def _host_call(self, values, out, stream):
        # NumPy in, NumPy out: every Python check first, before any copy to the device.
        a = self.bind(values, np.ndarray, out)
        if stream is None:
            dev = _device.current_device_id()
        elif isinstance(stream, _stream.Stream):
            dev = stream.state.device
        else:
            raise AclTypeError("stream", f"expected an acl_py.Stream or None, got "
                               f"{type(stream).__name__}")
        outs_given = self._check_out(out, a, np.ndarray, dev) if out is not None else None
        for i in self._into:    # results written back into the caller's arrays (if given)
            if i is not None and values[i] is not None and not values[i].flags.writeable:
                raise AclArgumentError(self.inputs[i].py, "array is read-only (the operator "
                                       "writes its result into it)")
        s = _stream.as_stream(stream, dev)
        made = []   # every device tensor made here, closed on the way out (stream-ordered)
        try:
            staged = []
            for arg, v in zip(self.inputs, values):
                if arg.kind is TENSOR:
                    v = a[arg.py]
                    if v is not None:
                        # Synchronous copies: from pageable memory aclrtMemcpyAsync waits
                        # for the stream too, and staging through pinned memory to queue
                        # it would add a host copy of every input.
                        v = DeviceTensor.from_numpy(v, device=dev)
                        made.append(v)
                staged.append(v)
            staged_out = None
            if outs_given is not None:   # the caller's shapes and dtypes
                staged_out = tuple(None if o is None else DeviceTensor.empty(
                    o.shape, self._staged_dtype(spec, o, a), dev)
                    for spec, o in zip(self.outputs, outs_given))
                made += [t for t in staged_out if t is not None]
            outs = self._run(tuple(staged), staged_out, dev,
                             _stream.state_for(s, dev))
            made += [t for k, t in enumerate(outs)   # the new ones
                     if t is not None and self._into[k] is None and
                     (staged_out is None or staged_out[k] is None)]
            s.synchronize()
            results = []
            for k, t in enumerate(outs):
                o = outs_given[k] if outs_given is not None else None
                if self._into[k] is not None:   # the caller's input array receives it
                    o = values[self._into[k]]
                if t is None:
                    results.append(None)
                elif o is None:
                    results.append(t.to_numpy())
                elif o.flags.c_contiguous and o.dtype.isnative and t.element_type is t.dtype:
                    # (not a HIFLOAT8 / INT4 tensor: the array holds their host form)
                    t.buffer.copy_to_host(o)   # straight into the caller's array
                    results.append(o)
                else:
                    o[...] = t.to_numpy()
                    results.append(o)
            return tuple(results)
        finally:
            for t in made:
                t.close()

    # ---- references ----

    def expected(self, values):
        """``(reference outputs, error scales)`` in float64 for NumPy inputs (declaration
        order), None where an output is not requested."""
        a = self.bind(values, np.ndarray)
        ref = self.reference(**a)
        scale = self.error_scale(**a)
        req = self._requested(a)
        return (tuple(r if q else None for r, q in zip(ref, req)),
                tuple(s if q else None for s, q in zip(scale, req)))

    def check_outputs(self, values, got, part=None):
        """Judges outputs ``got`` (NumPy, declaration order, None where absent) of a call on
        NumPy ``values`` against the float64 reference with the tolerance of
        :func:`acl_py.reference.max_error_ratio` (the first input's dtype): an
        :class:`OutputError` per output requested or returned, an :class:`OutputNotWritten`
        per output the part (``part``, default the current device's: :func:`part_of`) does
        not write for these values (not compared; returned anyway is a problem). An output
        compares as its reference's shape when it holds as many elements (mean/rstd: [M] or
        [M, 1])."""
        from .. import reference
        ref, scale = self.expected(values)
        why = None
        if self._unwritten:
            why = self.not_written(self.bind(values, np.ndarray),
                                   part_of() if part is None else part, got)
        in_dt = values[self._first_index].dtype
        res = []
        for k, (spec, g, r, s) in enumerate(zip(self.outputs, got, ref, scale)):
            problem = None
            # an unwritten output is reported as such even where the reference has no value
            # for it (AddRmsNormQuant's y2 without scales2)
            if why is not None and why[k] is not None:
                if g is None:
                    res.append(OutputNotWritten(spec.py, why[k]))
                    continue
                problem = f"returned although not written on this part ({why[k]})"
            elif g is None and r is None:
                continue
            elif r is None:
                problem = "returned although not requested"
            elif g is None:
                problem = "missing although requested"
            elif np.size(g) != np.size(r):
                problem = f"has shape {np.shape(g)}, expected {np.shape(r)}"
            if problem is not None:
                res.append(OutputError(spec.py, math.inf, math.inf, problem))
                continue
            g = np.asarray(g).reshape(np.shape(r))
            res.append(OutputError(spec.py, reference.max_abs_error(g, r),
                                   reference.max_error_ratio(g, r, s, in_dt), None))
        return tuple(res)

    def check_result(self, values, got):
        """The worst error ratio of each output of ``got`` (<= 1 passes; None where neither
        requested nor returned, or not written on the current device's part):
        :meth:`check_outputs` in short."""
        ratios = {o.name: o.error_ratio for o in self.check_outputs(values, got)
                  if isinstance(o, OutputError)}
        return tuple(ratios.get(spec.py) for spec in self.outputs)

    def run_smoke_case(self, case, stream=None):
        """Runs one of this declaration's smoke cases (``(name, make)``) as ``acl-py smoke``
        does (:func:`acl_py.smoke.run_declared_case`: device tensors, ``stream``) and returns
        :meth:`check_result`'s ratios (each <= 1); raises AssertionError with the smoke's
        finding (the outputs out of tolerance, or the error) when the case failed."""
        from .. import smoke   # the smoke test builds on the operators, not the reverse
        result = smoke.run_declared_case(smoke.declared_case(self, case), stream)
        if not result.passed:
            raise AssertionError(f"{self.short_name} smoke case {case[0]!r}: {result.error}")
        ratios = {o.name: o.error_ratio for o in result.outputs}
        return tuple(ratios.get(spec.py) for spec in self.outputs)


def _output_getter(k: int) -> Callable[[Plan], DeviceTensor | None]:
    def get(self: Plan) -> DeviceTensor | None:
        return self.outputs[k]
    return get


class Plan(Executor):
    """A reusable plan of a declared operator over fixed device tensors: the
    :class:`~acl_py.ops.Executor` of the call (phase one once, a repeatable executor and its
    workspace; ``run(stream)`` or ``plan(stream)`` enqueues phase two only and returns the
    outputs; ``mode``, ``workspace_size``, ``close()``, ``with``). Change the inputs' contents
    between runs freely (same tensors); results are valid once the stream has synchronized.
    Outputs (allocated here unless given in ``out=``) are ``outputs`` and attributes named as
    the operator's outputs (None where not requested or not written by the part); they
    outlive the plan.
    ``rebind(input=x2, out=y2, ...)`` (Python names, inputs and outputs alike) runs the plan
    on other tensors of the same dtypes, shapes and layouts from its next run on, without a
    new phase one (:meth:`~acl_py.ops.Executor.rebind`); ``outputs`` follows. An output the
    part does not write takes a tensor as ``out=`` does: checked as an ``out=`` entry (kind,
    open, device, dtype, shape), then left as it was; the device goes on writing the plan's
    scratch tensor and the output stays None.

    A subclass names its operator (``declared``) and its outputs become its attributes."""

    declared: "Declared | None" = None
    # (the checked arguments, why per output) when the part leaves outputs unwritten, else None;
    # the INT4 tensors being rebound by output name, whose INT32 words phase one reads
    __slots__ = ("_not_written", "_int4_rebinding")

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        for k, spec in enumerate(cls.declared.outputs):
            setattr(cls, spec.py, property(_output_getter(k), doc=f"The ``{spec.py}`` output."))

    def _prepare(self, values, out):
        d = self.declared
        first = values[d._first_index]
        if not isinstance(first, DeviceTensor):
            raise AclTypeError(d._first.py, f"{type(self).__name__} runs on "
                               f"acl_py.DeviceTensor arguments, got {type(first).__name__} "
                               f"(the one-shot call takes NumPy arrays)")
        dev = first.allocation.device
        a = d.bind(values, DeviceTensor, out, dev)
        outs = d._check_out(out, a, DeviceTensor, dev) if out is not None else None
        d._check_device(a, outs or (), dev)
        why = d.not_written(a, part_of(dev), outs) if d._unwritten else None
        outs = d._device_outputs(a, outs, dev, None, why)
        # Own arrays, not the shared cache: the executor keeps them for its whole life (an
        # unwritten output's scratch tensor too: the plan's outputs hold None for it).
        super().__init__(d, *d.own_arguments(d._c_args(a, outs, dev), dev), dev)
        self.outputs = outs if why is None else tuple(
            None if w is not None else t for t, w in zip(outs, why))
        self._not_written = None if why is None else (a, why)
        self._int4_rebinding = {}

    def _rebinding(self, name, own, t):
        """An output the part does not write: ``t`` checked as the plan's ``out=`` entry
        would be, and None (nothing re-pointed: ``t`` is left as it was, as that entry is).
        Re-pointing the scratch tensor at ``t`` would hand the caller's memory to a device
        that may copy undefined contents into it."""
        nw = self._not_written
        if nw is not None:
            a, why = nw
            for k, spec in enumerate(self.declared.outputs):
                if why[k] is not None and spec.py == name:
                    if not isinstance(t, DeviceTensor):
                        raise AclTypeError(name, f"expected an acl_py.DeviceTensor, got "
                                           f"{type(t).__name__}")
                    if t.closed:
                        raise ClosedError(f"{name}: DeviceTensor is closed")
                    dev = own.allocation.device     # the scratch tensor's: the plan's
                    if t.allocation.device != dev:
                        raise AclArgumentError(name, f"tensor is on device "
                                               f"{t.allocation.device}, the executor on "
                                               f"device {dev}")
                    self.declared._check_out_entry(k, t, a, DeviceTensor, dev,
                                                   self.outputs, name)
                    return None
        if isinstance(own, DeviceTensor) and own.dtype == np.int32 and isinstance(
                t, DeviceTensor) and not t.closed:
            for spec in self.declared.outputs:
                if spec.py == name and spec.int4_as_int32 is not None:
                    # phase one read the output's INT32 words (output(int4_as_int32=...))
                    if t.element_type is not _dt.INT4:
                        raise AclTypeError(name, f"dtype {_dtype_name(t.element_type)} != "
                                           f"int4, the dtype the plan was prepared for")
                    rule = t.int4_words_rule()
                    if rule is not None:
                        raise AclArgumentError(name, f"{rule}: the plan's phase one took "
                                               f"int4 {name} as int32 words")
                    words = super()._rebinding(name, own, t.int4_words())
                    self._int4_rebinding[name] = t
                    return words
        return super()._rebinding(name, own, t)

    def _rebound(self, name, t):
        t = self._int4_rebinding.pop(name, t)   # the INT4 tensor, not its words
        outs = self.outputs
        for k, spec in enumerate(self.declared.outputs):
            if outs[k] is None and spec.into is None:
                continue    # not requested, or not written by the part: stays None
            if spec.py == name or spec.into == name:    # an input rebound: its results too
                self.outputs = outs[:k] + (t,) + outs[k + 1:]

    @property
    def executor(self) -> "Plan":
        """The plan's :class:`~acl_py.ops.Executor` (the plan itself)."""
        return self

    def __repr__(self):
        state = "closed" if self.closed else f"workspace {self.workspace_size} bytes"
        return f"<acl_py.{type(self).__name__} {state}>"
