"""DeviceTensors of the device dtypes NumPy has no dtype for (acl_py.dtypes.HIFLOAT8, INT4):
their element type beside the uint8 storage dtype, kept through views, copies, the layout
cache and repoint; the aclTensor's aclDataType and element offsets; INT4's packing (two values
to a byte, the lower nibble first: emulator/src/ops/rms_norm_quant.c int4_pair) against an
independent per-element implementation; host forms (HIFLOAT8 uint8 codes, INT4 int8 values
or packed bytes); the refusals, typed and naming the argument.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import acl_py
from acl_py import dtypes
from acl_py.errors import AclArgumentError, AclTypeError
from acl_py.raw import ffi, lib

HIF8, INT4 = dtypes.HIFLOAT8, dtypes.INT4
U8, I8 = np.dtype(np.uint8), np.dtype(np.int8)


def nibble_bytes(values):
    """INT4 bytes written element by element from the format's definition: element i in byte
    i // 2, bits 0-3 for even i, 4-7 for odd i, two's complement."""
    out = bytearray((len(values) + 1) // 2)
    for i, v in enumerate(int(v) for v in values):
        out[i // 2] |= (v & 0xF) << (4 * (i % 2))
    return np.frombuffer(bytes(out), np.uint8)


def nibble_values(raw, count):
    res = []
    for i in range(count):
        n = (int(raw[i // 2]) >> (4 * (i % 2))) & 0xF
        res.append(n - 16 if n >= 8 else n)
    return np.array(res, np.int8)


def described(t):
    """(aclDataType, view offset) of the tensor's aclTensor as the library reads them."""
    code = ffi.new("aclDataType *")
    off = ffi.new("int64_t *")
    assert lib.aclGetDataType(t.handle, code) == 0
    assert lib.aclGetViewOffset(t.handle, off) == 0
    return code[0], off[0]


def test_pack_and_unpack_match_the_per_element_definition():
    rng = np.random.default_rng(3)
    for n in (0, 1, 2, 7, 64, 301):
        v = rng.integers(-8, 8, n).astype(np.int8)
        packed = dtypes.pack_int4(v)
        assert np.array_equal(packed, nibble_bytes(v))
        assert np.array_equal(dtypes.unpack_int4(packed, n), v)
        assert np.array_equal(nibble_values(packed, n), v)
    every = np.arange(256, dtype=np.uint8)      # every byte, both nibbles
    assert np.array_equal(dtypes.unpack_int4(every), nibble_values(every, 512))
    assert dtypes.pack_int4([1, -1]).tolist() == [0xF1]
    with pytest.raises(AclArgumentError, match="values"):
        dtypes.pack_int4([8])
    with pytest.raises(AclTypeError, match="values"):
        dtypes.pack_int4([0.5])
    with pytest.raises(AclTypeError, match="packed"):
        dtypes.unpack_int4(np.zeros(2, np.float32))


def test_element_type_names_and_refusals():
    for v in (HIF8, "hifloat8", "HIFLOAT8", dtypes.ACL_HIFLOAT8, np.int64(34)):
        assert dtypes.element_type(v) is HIF8
    for v in (INT4, "int4", dtypes.ACL_INT4):
        assert dtypes.element_type(v) is INT4
    assert dtypes.element_type("float16") == np.float16
    assert dtypes.to_acl(INT4) == lib.ACL_INT4 == 29 and dtypes.to_acl(HIF8) == 34
    assert dtypes.dtype_name(HIF8) == "hifloat8" and dtypes.dtype_name(np.float16) == "float16"
    # ml_dtypes' int4 holds one value a byte: not the device's INT4
    with pytest.raises(AclTypeError, match="no aclDataType") as ei:
        acl_py.DeviceTensor.empty((4,), ml_dtypes.int4)
    assert ei.value.argument == "dtype"
    with pytest.raises(AclTypeError, match="is an int"):
        dtypes.element_type(0)


@pytest.mark.parametrize("acl", [HIF8, INT4], ids=lambda d: d.name)
def test_a_tensor_keeps_its_element_type(acl):
    with acl_py.DeviceTensor.zeros((3, 6), acl) as t:
        assert t.dtype == U8 and t.element_type is acl and t.acl_dtype == acl.code
        assert t.shape == (3, 6) and t.strides == (6, 1)
        assert t.nbytes == 18 // acl.per_byte and t.buffer.nbytes == 18 // acl.per_byte
        assert t.storage_size == 18
        assert f"dtype={acl.name}" in repr(t)
        assert described(t) == (acl.code, 0)
        for v in (t[1], t[:, 1:5:2], t.T, t.reshape(9, 2), t[None, 2]):
            assert v.element_type is acl and v.dtype == U8
            assert described(v)[0] == acl.code
        assert described(t[1, 3:])[1] == 9
        c = t[1:].copy_to(t.device)
        assert c.element_type is acl and c.shape == (2, 6)
        c.close()
    # a plain uint8 tensor of the same layout keeps its own aclDataType (the layout cache)
    with acl_py.DeviceTensor.zeros((3, 6), U8) as u, acl_py.DeviceTensor.zeros((3, 6), acl) as t:
        assert described(u)[0] == lib.ACL_UINT8 and described(t)[0] == acl.code
    with acl_py.DeviceTensor.empty((3, 6), acl) as t, \
            acl_py.DeviceTensor(t.buffer, (3, 6), acl) as v:
        assert v.element_type is acl and described(v)[0] == acl.code


def test_hifloat8_reads_as_its_codes():
    codes = np.arange(256, dtype=np.uint8).reshape(16, 16)
    with acl_py.DeviceTensor.empty((16, 16), HIF8) as t:
        t.copy_from_numpy(codes)
        got = t.to_numpy()
        assert got.dtype == U8 and np.array_equal(got, codes)
        assert np.array_equal(t[3:9:2, 1::3].to_numpy(), codes[3:9:2, 1::3])
        assert np.array_equal(dtypes.hifloat8_to_float32(got),
                              dtypes.hifloat8_table()[codes].astype(np.float32),
                              equal_nan=True)
        with pytest.raises(AclTypeError, match="arr"):
            t.copy_from_numpy(codes.view(np.int8))


def test_int4_reads_as_values_and_its_bytes():
    rng = np.random.default_rng(7)
    v = rng.integers(-8, 8, (4, 10)).astype(np.int8)
    with acl_py.DeviceTensor.empty((4, 10), INT4) as t:
        assert t.nbytes == 20
        t.copy_from_numpy(v)
        got = t.to_numpy()
        assert got.dtype == I8 and got.shape == (4, 10) and np.array_equal(got, v)
        raw = t.to_numpy(packed=True)
        assert raw.dtype == U8 and raw.shape == (4, 5)
        assert np.array_equal(raw.reshape(-1), nibble_bytes(v.reshape(-1)))
        # views from odd element offsets, strided, transposed
        for key in [(1, slice(3, 8)), (slice(None), slice(1, None, 3)), (slice(1, 3),)]:
            assert np.array_equal(t[key].to_numpy(), v[key])
        assert np.array_equal(t.T.to_numpy(), v.T)
        # writing a view from an odd offset keeps the neighbouring nibbles
        t[2, 1:6].copy_from_numpy(np.full(5, -3, np.int8))
        v[2, 1:6] = -3
        assert np.array_equal(t.to_numpy(), v)
        t[:, 9].copy_from_numpy(np.array([7, -8, 0, 1]))
        v[:, 9] = [7, -8, 0, 1]
        assert np.array_equal(t.to_numpy(), v)
        odd = t[1, 3:8].copy_to(t.device)        # keeps its place in its first byte
        assert odd.offset == 1 and np.array_equal(odd.to_numpy(), v[1, 3:8])
        odd.close()
        with pytest.raises(AclArgumentError) as ei:
            t[1, 3:9].to_numpy(packed=True)
        assert ei.value.argument == "packed"
        with pytest.raises(AclArgumentError) as ei:
            t[1].copy_from_numpy(np.full(10, 8))
        assert ei.value.argument == "arr"
        with pytest.raises(AclTypeError) as ei:
            t[1].copy_from_numpy(np.zeros(10, np.float32))
        assert ei.value.argument == "arr"
        with pytest.raises(AclArgumentError):
            t.copy_from_numpy(v[:2])
        with acl_py.Stream() as s:
            assert np.array_equal(t.to_numpy(s), v)
        assert t.data_ptr == t[0, 1].data_ptr and t[0, 2].data_ptr == t.data_ptr + 1
    odd_shape = acl_py.DeviceTensor.empty((3,), INT4)
    assert odd_shape.nbytes == 2 and odd_shape.storage_size == 4
    odd_shape.copy_from_numpy(np.array([-1, 2, -3]))
    assert odd_shape.to_numpy().tolist() == [-1, 2, -3]
    odd_shape.close()


def test_int4_view_bounds_count_elements():
    with acl_py.DeviceBuffer(3) as buf:
        assert acl_py.DeviceTensor(buf, (6,), INT4).to_numpy().shape == (6,)
        with pytest.raises(AclArgumentError) as ei:
            acl_py.DeviceTensor(buf, (7,), INT4)
        assert ei.value.argument == "shape" and "int4" in str(ei.value)


def test_repoint_needs_the_same_element_type():
    with acl_py.DeviceTensor.zeros((8,), INT4) as a, acl_py.DeviceTensor.zeros((8,), U8) as b, \
            acl_py.DeviceTensor.zeros((8,), INT4) as c:
        view = a[:]
        with pytest.raises(AclArgumentError) as ei:
            view.repoint(b[:])
        assert ei.value.argument == "target"
        view.repoint(c[:])
        assert view.buffer is c.buffer and view.element_type is INT4
        view.close()


@pytest.mark.parametrize("name", ["int4", "hifloat8"])
def test_from_numpy_with_an_element_type(emulator, name):
    """from_numpy(arr, element_type=INT4 / HIFLOAT8, or their names): the host form in (int8
    values in [-8, 7] of any integer dtype; uint8 codes), a C-contiguous tensor of that
    element type out, its bytes INT4's packing of the values / the codes; from NumPy views
    (strided, transposed, an odd count), synchronously or on a stream; round trips through
    to_numpy. A value or dtype outside the host form is refused naming arr before anything is
    allocated."""
    et = dtypes.element_type(name)
    rng = np.random.default_rng(5)
    if et is INT4:
        base = rng.integers(-8, 8, (6, 10)).astype(np.int16)
    else:
        base = rng.integers(0, 256, (6, 10)).astype(U8)
    for arr in (base, base[1::2, ::3], base.T, base[0, :7]):
        t = acl_py.DeviceTensor.from_numpy(arr, element_type=name)
        assert t.element_type is et and t.dtype == U8 and t.shape == arr.shape
        assert t.is_contiguous and t.offset == 0
        assert described(t)[0] == et.code
        got = t.to_numpy()
        assert got.dtype == et.host and np.array_equal(got, arr)
        raw = np.empty(t.nbytes, U8)
        t.buffer.copy_to_host(raw)
        flat = np.ascontiguousarray(arr).reshape(-1)
        assert np.array_equal(raw, nibble_bytes(flat) if et is INT4 else flat)
        t.close()
    with acl_py.Stream() as s:
        t = acl_py.DeviceTensor.from_numpy(base, s, element_type=et)
        assert np.array_equal(t.to_numpy(s), base)
        t.close()
    bad = ([np.array([0, 8]), np.array([-9]), np.zeros(3, np.float32)] if et is INT4 else
           [base.view(np.int8), base.astype(np.int16), np.zeros(3, np.float32)])
    emulator.reset_call_counts()
    for arr in bad:
        with pytest.raises((AclArgumentError, AclTypeError)) as ei:
            acl_py.DeviceTensor.from_numpy(arr, element_type=et)
        assert ei.value.argument == "arr"
    assert "aclrtMalloc" not in emulator.call_counts()


def test_from_numpy_element_type_is_never_guessed():
    """Without element_type a uint8 / int8 array stays uint8 / int8; a NumPy element_type
    must be the array's dtype (no cast); an unknown one is refused naming element_type."""
    v = np.arange(-4, 4, dtype=np.int8)
    with acl_py.DeviceTensor.from_numpy(v) as t:
        assert t.element_type == I8 and t.nbytes == 8
    with acl_py.DeviceTensor.from_numpy(v, element_type=np.int8) as t:
        assert t.element_type == I8 and np.array_equal(t.to_numpy(), v)
    with pytest.raises(AclTypeError) as ei:
        acl_py.DeviceTensor.from_numpy(v, element_type=np.int16)
    assert ei.value.argument == "arr"
    with pytest.raises(AclTypeError) as ei:
        acl_py.DeviceTensor.from_numpy(v, element_type="int3")
    assert ei.value.argument == "element_type"


def test_int4_words_view_the_same_bytes():
    """int4_words: the int32 words over an INT4 view's bytes (element 8k + j in word k's
    nibble j), for a view whose rows start at words; int4_words_rule says why not
    otherwise."""
    v = np.random.default_rng(3).integers(-8, 8, (3, 32)).astype(np.int8)
    with acl_py.DeviceTensor.from_numpy(v, element_type=INT4) as t:
        for key in [(slice(None), slice(8, 24)), (slice(0, 3, 2),), (1, slice(16, 32))]:
            view = t[key]
            w = view.int4_words()
            assert w.dtype == np.int32 and w.shape == view.shape[:-1] + (view.shape[-1] // 8,)
            words = w.to_numpy()
            assert np.array_equal(dtypes.unpack_int4(words.view(U8)).reshape(view.shape),
                                  v[key])
            w.close()
        for view, words in ((t[:, 4:20], "word"), (t[:, ::2], "strided"),
                            (t[:, :12], "multiple of 8")):
            assert words in view.int4_words_rule()
            with pytest.raises(AclArgumentError) as ei:
                view.int4_words()
            assert ei.value.argument == "tensor"
    with acl_py.DeviceTensor.zeros((8,), np.int8) as t:
        assert "not an INT4" in t.int4_words_rule()
