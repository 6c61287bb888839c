"""A DeviceTensor call's diagnosis of phase one's refusal (acl_py/ops/_declare.py
``Declared._diagnose``) respects the refusal's stage: a Python rule the vendor checks at a
later stage (its tiling, an L0 op, the kernel's lookup: ``staged(codes, ...)``, 561002 /
561003 / 561103) is not taken as the explanation of an earlier stage's refusal (the op_api's
161001 / 161002), which the device returns before reaching it; the checks go on to a rule
of that stage, and where none breaks the refusal is raised as it is (its typed error, whose
message names the argument). NumPy calls still make every check before any C call, in the
check's order. Also: each declaration's staged codes against the codes its phase one
returns (docs/emulator.md's table of the operator), and ``format_option``.
"""
from __future__ import annotations

import inspect
import os
import pickle
import re

import numpy as np
import pytest

import acl_py
from acl_py.dtypes import INT4
from acl_py.errors import (AclArgumentError, AclError, AclTypeError,
                           OperatorInvalidParameterError)
from acl_py.ops import DECLARED, _declare
from acl_py.ops._declare import Declared, format_option, output, staged, tensor

from _part_runs import only_where, other_parts, run_on_parts, runs_here

PART = acl_py.soc.short_soc_version(acl_py.soc_name())
A2_A3 = PART in ("Ascend910B", "Ascend910_93")
DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs",
                    "emulator.md")
# The codes a DeviceTensor call's refusal is diagnosed for besides a declaration's rule_codes
# (OperatorParameterError's)
PARAMETER_CODES = {161001, 161002, 561002}


def _dev(*arrays):
    return tuple(None if a is None else acl_py.DeviceTensor.from_numpy(a) for a in arrays)


def _rms_norm_quant_inputs(n=16, offset=np.int8):
    return (np.ones((2, n), np.float16), np.ones((n,), np.float16), np.ones((n,), np.float16),
            np.ones((1,), np.float16), np.ones((1,), offset))


# ---- the rule: staged() and AclArgumentError.codes ----

def test_staged_raises_outside_a_diagnosis():
    with pytest.raises(AclArgumentError) as e:
        staged((561103,), "epsilon", "must be positive")
    assert e.value.argument == "epsilon" and e.value.codes == {561103}
    assert e.value.code is None     # nothing refused: a NumPy call's error
    with pytest.raises(AclTypeError):
        staged((561003,), "y_dtype", "no kernel", AclTypeError)


@pytest.mark.parametrize("code, raised", [(561103, True), (561002, True), (161002, False),
                                          (161001, False)])
def test_staged_in_a_diagnosis_raises_only_for_its_codes(code, raised):
    token = _declare._diagnosing.set(code)
    try:
        if raised:
            with pytest.raises(AclArgumentError) as e:
                staged((561103, 561002), "epsilon", "must be positive")
            assert e.value.explains(code)
        else:
            assert staged((561103, 561002), "epsilon", "must be positive") is None
    finally:
        _declare._diagnosing.reset(token)


def test_explains_and_pickles_the_codes():
    plain = AclArgumentError("gamma", "shape")
    assert plain.codes is None and plain.explains(161002) and plain.explains(561103)
    later = AclTypeError("y_dtype", "no kernel", codes=(561003,))
    assert later.explains(561003) and not later.explains(161002) and later.explains(None)
    back = pickle.loads(pickle.dumps(later))
    assert type(back) is AclTypeError and back.codes == {561003} and str(back) == str(later)


# ---- the diagnosis on the parts ----

@only_where(PART == "Ascend910")    # the Atlas training series: no dtype for the operator
def test_dtype_refusal_is_not_named_by_the_tilings_epsilon_rule():
    # Phase one refuses x's dtype for the part (the op_api's list, 161002) before the tiling
    # that refuses epsilon 0: the refusal is raised as it is, naming x.
    with pytest.raises(AclError) as e:
        acl_py.rms_norm_quant(*_dev(*_rms_norm_quant_inputs()), epsilon=0.0)
    err = e.value
    assert type(err) is OperatorInvalidParameterError and err.code == 161002
    assert "x dtype FLOAT16 is not supported on Ascend910A" in err.message
    assert "epsilon" not in str(err)


@only_where(A2_A3)     # the tiling's epsilon rule (Ascend 950's V2 has none)
def test_epsilon_named_where_the_tiling_refuses_it():
    with pytest.raises(AclArgumentError) as e:
        acl_py.rms_norm_quant(*_dev(*_rms_norm_quant_inputs()), epsilon=0.0)
    err = e.value
    assert err.argument == "epsilon" and err.code == 561103 and err.codes == {561103}
    assert "epsilon 0 is not positive" in err.message
    assert isinstance(err.__cause__, AclError) and err.__cause__.code == 561103


@only_where(A2_A3)
def test_op_api_rule_named_before_an_earlier_checked_tiling_rule():
    # int4 results with N = 12 (the tiling's N % 8, which the check makes first) beside a
    # float16 offset (the op_api's dtype rule, 161002, which the device reaches first)
    values = _rms_norm_quant_inputs(12, np.float16)
    with pytest.raises(AclTypeError) as e:
        acl_py.rms_norm_quant(*_dev(*values), y_dtype=INT4)
    assert e.value.argument == "offset" and e.value.code == 161002
    # a NumPy call makes every check before any C call, in the check's order (as before)
    with pytest.raises(AclArgumentError) as e:
        acl_py.rms_norm_quant(*values, y_dtype=INT4)
    assert e.value.argument == "x" and e.value.code is None and "multiple of 8" in str(e.value)


# y of another first dim than x's: off Ascend 950 only y's rank and last dim are the op_api's
# (CheckShapeDim, 161002), the rest is the ViewCopy's (561103); on Ascend 950 the op_api checks
# y's whole shape
_Y_ROWS = np.zeros((3, 16), np.int8)


@only_where(PART != "Ascend950")
def test_op_api_refusal_is_not_named_by_ys_view_copy_rule():
    # a float32 x, outside the op_api's x list off Ascend 950 (161002), beside a y of another
    # first dim, which the device's ViewCopy refuses after it: the refusal as it is, naming x
    values = _rms_norm_quant_inputs()
    values = (values[0].astype(np.float32), values[1].astype(np.float32),
              values[2].astype(np.float32), values[3].astype(np.float32), values[4])
    with pytest.raises(AclError) as e:
        acl_py.rms_norm_quant(*_dev(*values), out=_dev(_Y_ROWS))
    err = e.value
    assert type(err) is OperatorInvalidParameterError and err.code == 161002, err
    assert "x dtype FLOAT is not supported" in err.message and "out[0]" not in str(err)


@only_where(runs_here(DECLARED["RmsNormQuant"]))
def test_ys_shape_named_with_the_stage_that_refuses_it():
    with pytest.raises(AclArgumentError) as e:
        acl_py.rms_norm_quant(*_dev(*_rms_norm_quant_inputs()), out=_dev(_Y_ROWS))
    err = e.value
    assert err.argument == "out[0] (y)" and "shape (3, 16)" in str(err)
    if PART == "Ascend950":     # the op_api's CheckShapeDim: an unmarked rule
        assert err.code == 161002 and err.codes is None
    else:                       # the ViewCopy's
        assert err.code == 561103 and err.codes == {561103}
        assert "ViewCopy" in err.message


def _empty_scale_inputs():
    x, gamma, beta, _, _ = _rms_norm_quant_inputs()
    return x, gamma, beta, np.ones((0,), np.float16), np.ones((0,), np.int8)


@only_where(runs_here(DECLARED["RmsNormQuant"]) and PART != "Ascend950")
def test_empty_scale_is_named_after_the_tilings_epsilon():
    # the emulator refuses an empty scale last (161002, docs/emulator.md row 8), after the
    # tiling's epsilon rule (561103): epsilon is named, with its code
    with pytest.raises(AclArgumentError) as e:
        acl_py.rms_norm_quant(*_dev(*_empty_scale_inputs()), epsilon=0.0)
    assert e.value.argument == "epsilon" and e.value.code == 561103
    with pytest.raises(AclArgumentError) as e:      # and after y's ViewCopy
        acl_py.rms_norm_quant(*_dev(*_empty_scale_inputs()), out=_dev(_Y_ROWS))
    assert e.value.argument == "out[0] (y)" and e.value.code == 561103
    with pytest.raises(AclArgumentError) as e:      # alone, the scale is named with 161002
        acl_py.rms_norm_quant(*_dev(*_empty_scale_inputs()))
    err = e.value
    assert err.argument == "scale" and err.code == 161002 and err.codes == {161002}
    assert "scale is empty" in err.message


@only_where(runs_here(DECLARED["AddRmsNorm"]))
def test_add_rms_norm_names_x2_before_the_tilings_epsilon():
    # epsilon < 0 is the tiling's (561103), checked first in Python; x2's shape the op_api's
    x1, gamma = np.ones((2, 8), np.float16), np.ones((8,), np.float16)
    x2 = np.ones((2, 4), np.float16)
    with pytest.raises(AclArgumentError) as e:
        acl_py.add_rms_norm(*_dev(x1, x2, gamma), epsilon=-1.0)
    assert e.value.argument == "x2" and e.value.code == 161002
    with pytest.raises(AclArgumentError) as e:     # alone, epsilon is named with its code
        acl_py.add_rms_norm(*_dev(x1, x1, gamma), epsilon=-1.0)
    assert e.value.argument == "epsilon" and e.value.code == 561103


def test_generated_interface_names_the_dtype_before_its_tilings_shapes():
    # aclnnRmsNorm's tiling checks gamma and epsilon (561002) after the dtypes (161002): with
    # both broken phase one refuses y's dtype, and the diagnosis names the out= entry
    x, gamma = np.ones((2, 8), np.float32), np.ones((4,), np.float32)
    y, rstd = np.zeros((2, 8), np.float16), np.zeros((2, 1), np.float32)
    dx, dg = _dev(x, gamma)
    with pytest.raises(AclArgumentError) as e:
        acl_py.rms_norm(dx, dg, epsilon=-1.0, out=_dev(y, rstd))
    assert e.value.argument == "out[0] (y)" and e.value.code == 161002
    with pytest.raises(AclArgumentError) as e:
        acl_py.rms_norm(dx, dg, epsilon=-1.0)
    assert e.value.argument == "epsilon" and e.value.code == 561002
    with pytest.raises(AclArgumentError) as e:
        acl_py.rms_norm(dx, dg)
    assert e.value.argument == "gamma" and e.value.code == 561002


# ---- the op_api's order: dataFormat, then every tensor's dtype, then the shapes ----

def _instance_norm_inputs():
    return (np.ones((2, 8, 4, 4), np.float32), np.ones((8,), np.float32),
            np.ones((8,), np.float32))


def test_instance_norm_names_data_format_before_a_dtype():
    # aclnn_instance_norm.cpp CheckParams: CheckParamValid (dataFormat) before CheckDtypeValid;
    # both come before its part check, so every part refuses dataFormat (161002)
    x, gamma, beta = _instance_norm_inputs()
    bad_gamma = gamma.astype(np.float16)
    with pytest.raises(AclArgumentError) as e:
        acl_py.instance_norm(*_dev(x, bad_gamma, beta), data_format="NCWH")
    err = e.value
    assert err.argument == "data_format" and err.code == 161002, err
    assert "dataFormat" in err.message and err.call == "aclnnInstanceNormGetWorkspaceSize"
    with pytest.raises(AclArgumentError) as e:      # a NumPy call: the same order
        acl_py.instance_norm(x, bad_gamma, beta, data_format="NCWH")
    assert e.value.argument == "data_format" and e.value.code is None
    with pytest.raises(AclTypeError) as e:          # alone, the dtype is named
        acl_py.instance_norm(*_dev(x, bad_gamma, beta))
    assert e.value.argument == "gamma" and e.value.code == 161002


def test_instance_norm_names_an_outputs_dtype_before_xs_rank():
    # CheckDtypeValid (y, mean, variance: x's dtype) before the rank rules
    # (CheckInputAndWeightShape), and before the part check: every part names y
    x, gamma, beta = _instance_norm_inputs()
    x3 = np.ones((2, 8, 16), np.float32)
    y = np.zeros((2, 8, 16), np.float16)
    with pytest.raises(AclTypeError) as e:
        acl_py.instance_norm(*_dev(x3, gamma, beta), out=_dev(y, None, None))
    err = e.value
    assert err.argument == "out[0] (y)" and err.code == 161002, err
    assert "y dtype" in err.message
    with pytest.raises(AclTypeError) as e:
        acl_py.instance_norm(x3, gamma, beta, out=(y, None, None))
    assert e.value.argument == "out[0] (y)" and e.value.code is None


@only_where(not runs_here(DECLARED["InstanceNorm"]))
def test_instance_norm_part_refusal_is_not_named_by_xs_rank():
    # off the Atlas inference series CheckPlatform refuses (161002) before the rank rules: a
    # rank-3 x there is the part's refusal, raised as it is; a rank above 8 (CheckShape, before
    # the part check) is named
    x, gamma, beta = _instance_norm_inputs()
    with pytest.raises(AclError) as e:
        acl_py.instance_norm(*_dev(np.ones((2, 8, 16), np.float32), gamma, beta))
    err = e.value
    assert type(err) is OperatorInvalidParameterError and err.code == 161002, err
    assert "Atlas inference series" in err.message
    with pytest.raises(AclArgumentError) as e:
        acl_py.instance_norm(*_dev(np.ones((1,) * 9, np.float32), gamma, beta))
    assert e.value.argument == "x" and e.value.code == 161002 and "rank 9" in e.value.message


@only_where(runs_here(DECLARED["InstanceNorm"]))
def test_instance_norm_names_betas_rank_before_gammas_length():
    # CheckInputAndWeightShape: the three ranks (one rule) before gamma's length
    x, gamma, beta = _instance_norm_inputs()
    with pytest.raises(AclArgumentError) as e:
        acl_py.instance_norm(*_dev(x, gamma[:4], beta.reshape(8, 1)))
    err = e.value
    assert err.argument == "beta" and err.code == 161002 and "beta rank 2" in err.message


def _layer_norm_backward_inputs(n=16):
    x = np.linspace(-1, 1, 4 * n, dtype=np.float32).reshape(4, n)
    mean, rstd = np.zeros((4, 1), np.float32), np.ones((4, 1), np.float32)
    return x, x, [n], mean, rstd, np.ones(n, np.float32), np.zeros(n, np.float32)


def test_layer_norm_backward_names_an_outputs_dtype_before_grad_outs_shape():
    # aclnn_layer_norm_backward.cpp CheckParams: CheckDtype (the outputs' too) before
    # CheckShape (gradOut's shape = input's)
    dy, x, ns, mean, rstd, w, b = _layer_norm_backward_inputs()
    dy = dy[:2]
    gi = np.zeros(x.shape, np.int32)
    with pytest.raises(AclTypeError) as e:
        acl_py.layer_norm_backward(*_dev(dy, x), ns, *_dev(mean, rstd, w, b),
                                   out=_dev(gi, None, None))
    err = e.value
    assert err.argument == "out[0] (grad_input)" and err.code == 161002, err
    with pytest.raises(AclTypeError) as e:
        acl_py.layer_norm_backward(dy, x, ns, mean, rstd, w, b, out=(gi, None, None))
    assert e.value.argument == "out[0] (grad_input)" and e.value.code is None
    with pytest.raises(AclArgumentError) as e:      # alone, gradOut's shape is named
        acl_py.layer_norm_backward(*_dev(dy, x), ns, *_dev(mean, rstd, w, b))
    assert e.value.argument == "grad_out" and e.value.code == 161002


def test_layer_norm_backward_gradients_shape_named_with_the_copys_code():
    # N elements in another shape than normalized_shape: the op_api's CheckShape passes it
    # (it counts elements), the copy of the result refuses it (its status dropped on a
    # device, the entry left unwritten): the emulator's 561103 (docs/emulator.md, rule 8)
    args = _layer_norm_backward_inputs()
    dev = _dev(*args[:2]) + (args[2],) + _dev(*args[3:])
    for k, shape in ((1, (1, 16)), (2, (2, 8))):
        out = [None, None, None]
        out[k] = np.zeros(shape, np.float32)
        with pytest.raises(AclArgumentError) as e:
            acl_py.layer_norm_backward(*dev, out=_dev(*out))
        err = e.value
        assert err.argument.startswith(f"out[{k}]") and err.code == 561103, err
        assert err.codes == {561103} and "normalizedShape [16]" in err.message
        with pytest.raises(AclArgumentError) as e:
            acl_py.layer_norm_backward(*args, out=tuple(out))
        assert e.value.argument.startswith(f"out[{k}]") and e.value.codes == {561103}
        # beside an op_api fault (input's shape against normalized_shape) that one is named
        with pytest.raises(AclArgumentError) as e:
            acl_py.layer_norm_backward(dev[0], dev[1], [8], *dev[3:], out=_dev(*out))
        assert e.value.code == 161002 and not e.value.argument.startswith("out["), e.value
    # N elements of another shape pass where nothing is copied: an empty input, N = 1
    x0 = np.zeros((0, 16), np.float32)
    got = acl_py.layer_norm_backward(x0, x0, [16], np.zeros((0, 1), np.float32),
                                     np.zeros((0, 1), np.float32),
                                     out=(None, np.ones((1, 16), np.float32), None))
    assert got[1].shape == (1, 16) and not got[1].any()     # filled with zeros
    x1 = np.ones((4, 1), np.float32)
    got = acl_py.layer_norm_backward(x1, x1, [1], np.ones((4, 1), np.float32),
                                     np.ones((4, 1), np.float32),
                                     out=(None, np.ones((1, 1), np.float32), None))
    assert got[1].shape == (1, 1) and got[1][0, 0] == 0     # sum of dy * (x - mean) * rstd


# ---- the declarations' staged codes ----

def _doc_codes(short_name):
    """Every status code in the table of aclnn<short_name>'s section of docs/emulator.md (and
    the table it refers to, where its phase one is another's with differences)."""
    with open(DOCS, encoding="utf-8") as f:
        text = f.read()
    heading = re.search(rf"^## [^\n]*\baclnn{short_name}\b(?!V2)[^\n]*$", text, re.M)
    assert heading, f"docs/emulator.md has no section for aclnn{short_name}"
    end = text.find("\n## ", heading.end())
    section = text[heading.end():end if end >= 0 else len(text)]
    codes = set()
    # a phase one stated as another's with differences (GemmaRmsNorm's, RmsNorm's): its table too
    for other in re.findall(r"is aclnn(\w+)'s \(the table there\)", section):
        codes |= _doc_codes(other)
    for line in section.splitlines():
        if line.startswith("|"):
            codes.update(int(c) for c in re.findall(r"\b[15]6\d{4}\b", line.split("|")[-2]))
    return codes


def _code_tuple(v):
    return type(v) is tuple and v and all(type(c) is int and 100000 <= c <= 599999 for c in v)


def _stages(fn, seen=None):
    """Whether function ``fn`` (a declaration's check) or an operator module's function it
    calls raises through staged(): names ``staged``, or hands a tuple of status codes (a
    module's ``_TILING``) to a helper (check_same_shape's ``codes``)."""
    seen = set() if seen is None else seen
    if fn in seen:
        return False
    seen.add(fn)
    codes = [fn.__code__]
    names = set()
    while codes:
        c = codes.pop()
        names.update(c.co_names)
        codes += [k for k in c.co_consts if inspect.iscode(k)]
    glob = fn.__globals__
    if "staged" in names or any(_code_tuple(glob.get(n)) for n in names):
        return True
    return any(_stages(glob[n], seen) for n in names
               if inspect.isfunction(glob.get(n)) and
               glob[n].__module__.startswith("acl_py.ops.") and
               glob[n].__module__ != "acl_py.ops._declare")


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_staged_codes_are_codes_its_phase_one_returns(name):
    declared = DECLARED[name]
    staged_codes = declared.staged_codes
    # a refusal with one of them runs the diagnosis at all
    assert staged_codes <= PARAMETER_CODES | declared.rule_codes, staged_codes
    # and the operator's rules table gives each to a row
    assert staged_codes <= _doc_codes(name), (staged_codes, _doc_codes(name))
    # a check raising staged rules, or an out= entry's rule of the result's copy into it
    # (output(later=)), declares their codes (and only such a declaration does)
    assert bool(staged_codes) == ((declared.check is not None and _stages(declared.check)) or
                                  any(o.later is not None for o in declared.outputs))


def test_staged_rules_are_marked_where_they_were_audited():
    # the tiling-stage rules of the operators whose Python checks hold them (epsilon, the
    # shapes a generated interface's tiling checks, the kernel's lookup, the UB minimum)
    # and the out= shapes of a later stage (test_out_rules_are_staged_where_a_later_stage_...):
    # the op_api's copies of the results (BatchNormBackward's 561103)
    expected = {"RmsNormQuant": {561103, 161002}, "AddRmsNorm": {561103}, "RmsNorm": {561002},
                "GemmaRmsNorm": {561002}, "InplaceAddRmsNorm": {561002},
                "AddLayerNorm": {561002}, "AddLayerNormGrad": {561002},
                "DeepNorm": {561002}, "DeepNormGrad": {561002}, "RmsNormGrad": {561002},
                "AddLayerNormQuant": {561002, 561003}, "AddRmsNormQuant": {561003, 561103},
                "AddRmsNormDynamicQuant": {561002, 561003, 161002, 561103},
                "BatchNormBackward": {561103},
                "AddRmsNormDynamicQuantV2": {561002, 561003, 161002},
                "GroupNormSilu": {561103}, "GroupNormSiluV2": {561103},
                "InstanceNorm": {561103}, "LayerNormBackward": {561103}}
    assert {n: set(d.staged_codes) for n, d in DECLARED.items() if d.staged_codes} == expected


# ---- a staged rule passed over: nothing after it relies on it ----

def _mutations(declared, values):
    """Argument sets one change away from a smoke case's ``values`` (NumPy): each tensor
    input of another last dim, without its last dim, with an empty last dim, with a leading
    dim more; each double 0, -1 and NaN."""
    for i, (arg, v) in enumerate(zip(declared.inputs, values)):
        changed = []
        if isinstance(v, np.ndarray) and v.ndim:
            s = v.shape
            changed = [np.ones(s[:-1] + (s[-1] + 1,), v.dtype), np.ones(s[:-1], v.dtype),
                       np.ones(s[:-1] + (0,), v.dtype), np.ones((2,) + s, v.dtype)]
        elif type(v) is float:
            changed = [0.0, -1.0, float("nan")]
        for c in changed:
            yield values[:i] + (c,) + values[i + 1:]


def test_staged_rules_passed_over_leave_a_check_that_runs_on():
    # staged() returns (the rule passed over) while a refusal with another code is diagnosed,
    # and the check goes on: statements after a staged rule must not rely on it. Mechanically:
    # for each argument set whose check (outside a diagnosis) raises a staged rule, the check
    # run in a diagnosis of a code no rule of the operator states (every staged rule passed
    # over) ends, or raises a typed error of a plain rule, never a crash of code that took
    # the rule for granted (an index, a division, a None). Which later rule is the right one
    # to name is the device's to say: the two-rule cases above and the out= audit below.
    reached = set()
    for name, declared in sorted(DECLARED.items()):
        if not declared.staged_codes or declared.check is None:
            continue
        for _, make in declared.smoke_cases:
            base = tuple(make())
            for values in _mutations(declared, base):
                try:
                    declared.bind(values, np.ndarray)
                except (AclArgumentError, AclTypeError) as e:
                    if e.codes is None:
                        continue
                else:
                    continue
                reached.add(name)
                token = _declare._diagnosing.set(0)     # a code no rule states
                try:
                    declared.bind(values, np.ndarray)
                except (AclArgumentError, AclTypeError) as e:
                    assert e.codes is None, (name, e)
                finally:
                    _declare._diagnosing.reset(token)
    # one change of a smoke case reaches the tiling rules of RmsNorm (every part), and of
    # RmsNormQuant where it runs (the others need two changes or sit in out= entries)
    assert "RmsNorm" in reached, reached
    assert "RmsNormQuant" in reached or not runs_here(DECLARED["RmsNormQuant"]), reached


# ---- out= entries: the stage that refuses them ----

# the codes of phase one's own argument checks (the op_api's): an out= rule refused with
# another code is a later stage's (its tiling's, the result's copy into the entry)
_OP_API_CODES = {161001, 161002}


def _broken_entries(declared, result):
    """For each result of a call of ``declared`` (an output not written into an input),
    ``(k, what, tensor)``: an ``out=`` entry ``k`` of another last dim, first dim or rank
    than the result's. (Dtypes are left open: an entry's dtype is the op_api's to refuse
    outside its list and the copy's inside it, per output and part.)"""
    for k, t in enumerate(result):
        if t is None or declared.outputs[k].into is not None:
            continue
        shape, dt = t.shape, t.element_type
        shapes = [("rank", (1,) + shape)]
        if shape:
            shapes.append(("last dim", shape[:-1] + (shape[-1] + 1,)))
        if len(shape) > 1:
            shapes.append(("first dim", (shape[0] + 1,) + shape[1:]))
        for what, s in shapes:
            yield k, what, acl_py.DeviceTensor.empty(s, dt)


# Left open: FastLayerNorm's mean/rstd, whose stage depends on the input (an element count
# other than M: the emulator's stricter 161002 for an empty input, else the copy's 561103)
_OUT_STAGES_LEFT_OPEN = {"FastLayerNorm"}


@pytest.mark.parametrize("name", sorted(n for n, d in DECLARED.items()
                                        if d.smoke_cases and runs_here(d) and
                                        n not in _OUT_STAGES_LEFT_OPEN))
def test_out_rules_are_staged_where_a_later_stage_refuses_them(name):
    # Each out= entry's shape broken alone (its smoke case's arguments): where the device
    # refuses it after the op_api's checks (the tiling's 561002, the ViewCopy's 561103), the rule
    # naming it states that code (output(later=)), so that it does not explain an earlier
    # refusal; where the op_api refuses it, it may explain any.
    declared = DECLARED[name]
    values = tuple(acl_py.DeviceTensor.from_numpy(v) if isinstance(v, np.ndarray) else v
                   for v in declared.smoke_cases[0][1]())
    result, found = (), []
    try:
        result = declared.call(values)
        result = result if isinstance(result, tuple) else (result,)
        for k, what, entry in _broken_entries(declared, result):
            out = [None] * len(result)
            out[k] = entry
            try:
                declared.call(values, out=tuple(out))
            except (AclArgumentError, AclTypeError) as e:
                # what is kept of it: not the error (its frames hold the call's tensors)
                found.append((k, what, e.argument, e.code, e.codes, str(e)))
            finally:
                entry.close()
    finally:
        for t in values + result:
            if isinstance(t, acl_py.DeviceTensor):
                t.close()
    # (none refused: every entry is one the part's op_api does not see, e.g. InplaceAddRmsNorm's
    # rstd on Ascend310P3, a scratch tensor there)
    for k, what, argument, code, codes, text in found:
        assert code is not None and argument.startswith(f"out[{k}]"), (what, text)
        if code in _OP_API_CODES:
            assert codes is None or code in codes, (what, code, codes, text)
        else:
            assert codes is not None and code in codes, (what, code, codes, text)


# ---- format_option ----

def test_format_option_converts_and_refuses_naming_the_argument():
    arg = format_option("layout", ("NHWC", "NCHW"), default="NHWC")
    assert arg.py == "layout" and arg.default == "NHWC"
    assert arg.convert("NCHW", "layout") == "NCHW"
    for bad, cls, text in (("ND", AclArgumentError, "'ND' is not one of NHWC, NCHW"),
                           ("nchw", AclArgumentError, "'nchw' is not one of NHWC, NCHW"),
                           (1, AclTypeError, "expected a str (NHWC, NCHW), got int"),
                           (b"NCHW", AclTypeError, "got bytes"),
                           (np.str_("NCHW"), AclTypeError, "got str_")):
        with pytest.raises(cls) as e:
            arg.convert(bad, "layout")
        assert e.value.argument == "layout" and text in str(e.value)
        assert type(e.value) is cls


def _channels(a):
    return (a.x.shape[3 if a.layout == "NHWC" else 1],)


# BatchNormReduce declared anew: its x goes to phase one in the aclFormat ``layout`` names
_REDUCE = Declared("aclnnBatchNormReduce", (
    tensor("x", format="layout", dtypes=("float32",)),
    format_option("layout", ("NHWC", "NCHW"), default="NHWC"),
    output("sum", shape=_channels, dtype=np.float32),
    output("squareSum", name="square_sum", shape=_channels, dtype=np.float32),
), register=False)


@pytest.mark.parametrize("device", [False, True], ids=["numpy", "device"])
def test_format_option_reaches_phase_one(device):
    x = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5) / 16
    for layout, axes in (("NHWC", (0, 1, 2)), ("NCHW", (0, 2, 3))):
        values = (acl_py.DeviceTensor.from_numpy(x) if device else x, layout)
        s, q = _REDUCE.call(values)
        s, q = (s.to_numpy(), q.to_numpy()) if device else (s, q)
        np.testing.assert_allclose(s, x.sum(axis=axes), rtol=1e-6)
        np.testing.assert_allclose(q, (x * x).sum(axis=axes), rtol=1e-6)
    with pytest.raises(AclArgumentError) as e:
        _REDUCE.call((acl_py.DeviceTensor.from_numpy(x) if device else x, "ND"))
    assert e.value.argument == "layout" and e.value.code is None


test_on_other_parts = run_on_parts(other_parts(), "refusal or named or names or staged or "
                                   "format_option")
