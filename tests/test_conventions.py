"""The conventions Python users bring from NumPy and CuPy: a DeviceTensor is never converted to
NumPy implicitly (TypeError pointing to .to_numpy(), no array interface, no buffer protocol),
len() and iteration behave as NumPy's do (views along the first axis), truth values are not
guessed; ``acl_py.reference`` is reachable from ``import acl_py``; sizes in messages read in
MiB/GiB as well as bytes."""
from __future__ import annotations

import numpy as np
import pytest

import acl_py
from acl_py import DeviceTensor
from acl_py._units import human_size, size_text


@pytest.fixture
def tensor():
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    with DeviceTensor.from_numpy(x) as t:
        yield t, x


@pytest.mark.parametrize("convert", [
    np.asarray, np.array, np.asanyarray, np.ascontiguousarray,
    lambda t: np.add(t, 1), lambda t: np.stack([t, t]), lambda t: np.array([t, t]),
], ids=["asarray", "array", "asanyarray", "ascontiguousarray", "ufunc", "stack", "list"])
def test_no_implicit_conversion_to_numpy(tensor, convert):
    t, _ = tensor
    with pytest.raises(TypeError, match=r"\.to_numpy\(\)"):
        convert(t)


def test_no_array_interface_or_buffer(tensor):
    t, x = tensor
    assert not hasattr(t, "__array_interface__")
    assert not hasattr(t, "__array_struct__")
    with pytest.raises(TypeError):
        memoryview(t)
    # The explicit path still works, and the tensor is untouched by the refusals.
    np.testing.assert_array_equal(t.to_numpy(), x)


def test_len_and_iteration_follow_numpy(tensor):
    t, x = tensor
    assert len(t) == 4
    rows = list(t)
    assert len(rows) == 4
    for row, expected in zip(rows, x):
        assert isinstance(row, DeviceTensor) and row.is_view
        assert row.shape == (6,)
        np.testing.assert_array_equal(row.to_numpy(), expected)
    cols = list(t.T)                         # a strided view iterates the same way
    assert [c.shape for c in cols] == [(4,)] * 6
    np.testing.assert_array_equal(cols[5].to_numpy(), x[:, 5])
    assert list(t[:0]) == [] and len(t[:0]) == 0


def test_zero_d_tensor_has_no_len_or_iteration(tensor):
    t, x = tensor
    scalar = t[1, 2]
    assert scalar.shape == ()
    with pytest.raises(TypeError, match="0-d"):
        len(scalar)
    with pytest.raises(TypeError, match="0-d"):
        iter(scalar)
    assert scalar.to_numpy() == x[1, 2]


def test_truth_value_is_not_guessed(tensor):
    t, _ = tensor
    for candidate in (t, t[:0], t[0, 0]):
        with pytest.raises(TypeError, match="ambiguous"):
            bool(candidate)


def test_closed_tensor_iteration_raises(tensor):
    t, _ = tensor
    view = t[1:]
    view.close()
    with pytest.raises(acl_py.ClosedError):
        iter(view)


def test_reference_is_reachable_from_the_package():
    # README: "acl_py.reference is the NumPy float64 reference" (no separate import needed).
    assert "reference" in acl_py.__all__
    assert callable(acl_py.reference.layer_norm_backward)
    assert set(acl_py.reference.RTOL) == {"float32", "float16", "bfloat16"}


def test_sizes_read_in_binary_units():
    assert size_text(100 << 20) == "104857600 bytes (100.0 MiB)"
    assert size_text(3 << 30) == "3221225472 bytes (3.0 GiB)"
    assert size_text(512) == "512 bytes"
    assert human_size(1536) == "1.5 KiB" and human_size(0) == "0 B"


def test_view_error_gives_the_size_in_mib():
    with acl_py.DeviceBuffer(1 << 20) as buf:
        with pytest.raises(acl_py.AclArgumentError, match=r"1048576 bytes \(1\.0 MiB\)"):
            DeviceTensor(buf, (1 << 20,), np.float32)


@pytest.mark.parametrize("allocate", [
    lambda: acl_py.DeviceBuffer(1 << 40, pool=None),      # aclrtMalloc directly
    lambda: DeviceTensor.empty((1 << 38,), np.float32),   # through the memory pool
], ids=["direct", "pool"])
def test_out_of_memory_says_how_much_in_human_units(allocate):
    # 1 TiB: more than any emulated (or real) device has.
    with pytest.raises(acl_py.DeviceMemoryError) as info:
        allocate()
    assert info.value.code == 207001 and info.value.call == "aclrtMalloc"
    assert str(info.value).endswith("requested 1099511627776 bytes (1.0 TiB)")


def test_copy_too_large_gives_both_sizes():
    with acl_py.DeviceBuffer(1 << 20) as buf:
        with pytest.raises(acl_py.AclArgumentError,
                           match=r"2097152 bytes \(2\.0 MiB\) at offset 0 do not fit in the "
                                 r"buffer's 1048576 bytes \(1\.0 MiB\)"):
            buf.copy_from_host(bytes(2 << 20))
