"""The status-code table, the exception families, and errors raised by real failing calls."""
import pickle
import re

import pytest

import acl_py
from acl_py import errors
from acl_py._ffi import ffi

# Every status code the bindings declare, with the family it must raise.
EXPECTED = {
    "ACL_ERROR_INVALID_PARAM": errors.InvalidParameterError,
    "ACL_ERROR_UNINITIALIZE": errors.NotInitializedError,
    "ACL_ERROR_REPEAT_INITIALIZE": errors.AlreadyInitializedError,
    "ACL_ERROR_BAD_ALLOC": errors.DeviceMemoryError,
    "ACL_ERROR_API_NOT_SUPPORT": errors.NotSupportedError,
    "ACL_ERROR_INVALID_DEVICE": errors.DeviceError,
    "ACL_ERROR_INVALID_RESOURCE_HANDLE": errors.InvalidHandleError,
    "ACL_ERROR_STORAGE_OVER_LIMIT": errors.DeviceMemoryError,
    "ACL_ERROR_INTERNAL_ERROR": errors.InternalError,
    "ACL_ERROR_FAILURE": errors.RuntimeFailure,
    "ACL_ERROR_RT_PARAM_INVALID": errors.InvalidParameterError,
    "ACL_ERROR_RT_INVALID_DEVICEID": errors.DeviceError,
    "ACL_ERROR_RT_CONTEXT_NULL": errors.DeviceError,
    "ACL_ERROR_RT_STREAM_CONTEXT": errors.DeviceError,
    "ACL_ERROR_RT_INVALID_HANDLE": errors.InvalidHandleError,
    "ACL_ERROR_RT_FEATURE_NOT_SUPPORT": errors.NotSupportedError,
    "ACL_ERROR_RT_MEMORY_ALLOCATION": errors.DeviceMemoryError,
    "ACL_ERROR_RT_INTERNAL_ERROR": errors.InternalError,
    "ACL_ERROR_INVALID_FILE": errors.InvalidParameterError,
    "ACL_ERROR_PARSE_FILE": errors.InvalidParameterError,
    "ACL_ERROR_REPEAT_FINALIZE": errors.NotInitializedError,
    "ACL_ERROR_RT_INVALID_MEMORY_TYPE": errors.InvalidParameterError,
    "ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID": errors.InvalidParameterError,
    "ACL_ERROR_RT_RESOURCE_ALLOC_FAIL": errors.DeviceError,
    "ACL_ERROR_RT_CONTEXT_RELEASE_ERROR": errors.DeviceError,
    # a bounded synchronize ran out of time (aclrtSynchronize*WithTimeout)
    "ACL_ERROR_RT_STREAM_SYNC_TIMEOUT": errors.AclTimeoutError,
    "ACL_ERROR_RT_EVENT_SYNC_TIMEOUT": errors.AclTimeoutError,
    "ACLNN_ERR_PARAM_NULLPTR": errors.OperatorNullPointerError,
    "ACLNN_ERR_PARAM_INVALID": errors.OperatorInvalidParameterError,
    "ACLNN_ERR_INNER_TILING_ERROR": errors.OperatorTilingError,
    "ACLNN_ERR_RUNTIME_ERROR": errors.RuntimeFailure,
    "ACLNN_ERR_INNER": errors.InternalError,
    "ACLNN_ERR_INNER_CREATE_EXECUTOR": errors.InternalError,
    "ACLNN_ERR_INNER_NULLPTR": errors.InternalError,
    # What a device's runtime returns when the driver sees no NPU (or ASCEND_RT_VISIBLE_DEVICES
    # is refused), the user may not open it, or it is lost (hicann/runtime errcode_manage.cc),
    # and an install whose operator kernels are not found (ASCEND_OPP_PATH).
    "ACL_ERROR_RT_NO_DEVICE": errors.DeviceError,
    "ACL_ERROR_RT_NO_PERMISSION": errors.DeviceError,
    "ACL_ERROR_RT_DEV_SETUP_ERROR": errors.DeviceError,
    "ACL_ERROR_RT_LOST_HEARTBEAT": errors.DeviceError,
    "ACL_ERROR_RT_DRV_INTERNAL_ERROR": errors.DeviceError,
    "ACL_ERROR_RT_DEVICE_OOM": errors.DeviceMemoryError,
    "ACLNN_ERR_INNER_FIND_KERNEL_ERROR": errors.InternalError,
    "ACLNN_ERR_INNER_OPP_PATH_NOT_FOUND": errors.InternalError,
    "ACLNN_ERR_INNER_OPP_KERNEL_PKG_NOT_FOUND": errors.InternalError,
}


def test_table_covers_every_declared_code_with_its_value():
    for name, cls in EXPECTED.items():
        code = ffi.integer_const(name)          # the value the headers declare
        assert errors.STATUS[code][0] == name
        assert errors.error_class(code) is cls
        assert errors.CODES[name] == code
    assert errors.STATUS[0][0] == "ACL_SUCCESS"
    assert ffi.integer_const("ACL_SUCCESS") == ffi.integer_const("ACLNN_SUCCESS") == 0
    # nothing in the table that the headers do not declare
    assert set(errors.CODES) - set(EXPECTED) == {"ACL_SUCCESS"}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_code_raises_its_family_with_fields(name):
    code = ffi.integer_const(name)
    with pytest.raises(errors.AclError) as info:
        errors.raise_error(code, "aclSomething")
    e = info.value
    assert type(e) is EXPECTED[name]
    assert (e.code, e.name, e.call) == (code, name, "aclSomething")
    assert str(e).startswith(f"aclSomething failed: {name} ({code})")


def test_family_relations():
    assert issubclass(errors.DeviceMemoryError, MemoryError)
    assert issubclass(errors.DeviceMemoryError, errors.AclError)
    assert issubclass(errors.OperatorNullPointerError, errors.OperatorParameterError)
    assert issubclass(errors.OperatorInvalidParameterError, errors.OperatorParameterError)
    assert issubclass(errors.OperatorTilingError, errors.OperatorParameterError)
    assert issubclass(errors.InvalidHandleError, errors.InvalidParameterError)
    assert issubclass(errors.AclTimeoutError, TimeoutError)
    assert issubclass(errors.AclTimeoutError, errors.AclError)
    assert issubclass(errors.AclArgumentError, ValueError)
    assert issubclass(errors.AclTypeError, TypeError)
    assert issubclass(errors.AclTypeError, ValueError)
    assert issubclass(errors.ClosedError, ValueError)
    assert issubclass(acl_py.FinalizedError, errors.NotInitializedError)
    assert issubclass(acl_py.FinalizedError, errors.ClosedError)
    assert not issubclass(errors.AclArgumentError, errors.AclError)


def test_unknown_code_is_plain_aclerror():
    e = errors.make_error(123456, "aclFoo")
    assert type(e) is errors.AclError and e.name == "UNKNOWN" and e.code == 123456
    assert "aclFoo failed: UNKNOWN (123456)" in str(e)


@pytest.mark.parametrize("code,name", [
    (507011, "ACL_ERROR_RT_MODEL_EXECUTE"),
    (507048, "ACL_ERROR_RT_FFTS_PLUS_TIMEOUT"),
    (561105, "ACLNN_ERR_INNER_KEY_CONFLICT"),   # not the deprecated misspelled alias
])
def test_other_declared_codes_keep_the_vendors_name(code, name):
    e = errors.make_error(code, "aclrtSynchronizeStream")
    assert type(e) is errors.AclError and e.name == name
    assert f"aclrtSynchronizeStream failed: {name} ({code})" in str(e)


def test_str_with_and_without_message():
    e = errors.DeviceMemoryError(207001, "aclrtMalloc", "size 5 exceeds the cap")
    assert str(e) == ("aclrtMalloc failed: ACL_ERROR_RT_MEMORY_ALLOCATION (207001): "
                      "size 5 exceeds the cap")
    assert str(errors.InternalError(507000, "aclrtFree")) == \
        "aclrtFree failed: ACL_ERROR_RT_INTERNAL_ERROR (507000)"


def test_errors_pickle_with_fields():
    e = errors.OperatorInvalidParameterError(161002, "aclnnX", "rank 9 > 8")
    e2 = pickle.loads(pickle.dumps(e))
    assert type(e2) is type(e) and (e2.code, e2.call, e2.message, e2.name) == \
        (e.code, e.call, e.message, e.name)
    a = pickle.loads(pickle.dumps(errors.AclArgumentError("shape", "negative")))
    assert a.argument == "shape" and str(a) == "shape: negative"


def test_check_passes_success_and_raises_failure():
    assert errors.check(0, "aclrtMalloc") is None
    with pytest.raises(errors.InvalidParameterError):
        errors.check(100000, "aclrtMalloc")


def test_argument_error_names_the_argument():
    e = errors.AclArgumentError("nbytes", "must be >= 0, got -1")
    assert e.argument == "nbytes" and str(e) == "nbytes: must be >= 0, got -1"


# ---- through real failing calls ---------------------------------------------------------

def test_real_failure_carries_recent_message():
    from acl_py.raw import lib
    acl_py.set_device(0)    # the raw call below needs a device on this thread
    status = lib.aclrtFree(ffi.NULL)
    with pytest.raises(errors.InvalidParameterError) as info:
        errors.check(status, "aclrtFree")
    e = info.value
    assert e.code == 100000 and e.name == "ACL_ERROR_INVALID_PARAM"
    assert e.message, "aclGetRecentErrMsg() gave no text"
    assert "aclrtFree" in e.message
    # the message was consumed: the next read is empty (or at least not the same failure)
    assert errors.recent_message() != e.message


def test_out_of_memory_is_device_memory_error():
    with pytest.raises(MemoryError) as info:
        acl_py.DeviceBuffer(1 << 62)
    e = info.value
    assert isinstance(e, errors.DeviceMemoryError)
    assert e.code == 207001 and e.call == "aclrtMalloc"
    assert re.match(r"aclrtMalloc failed: ACL_ERROR_RT_MEMORY_ALLOCATION \(207001\): .+",
                    str(e))


def test_create_failure_is_create_failed_error(emulator):
    with emulator.inject_faults("aclCreateIntArray:1"):
        with pytest.raises(errors.CreateFailedError) as info:
            acl_py.IntArray([1, 2])
    e = info.value
    assert e.code is None and e.call == "aclCreateIntArray"
    assert "injected" in e.message
    assert str(e).startswith("aclCreateIntArray failed: returned NULL: ")


def test_error_messages_are_per_thread(emulator):
    """The message is read on the failing thread right after the call."""
    import threading
    from acl_py.raw import lib
    results = {}

    def fail(i):
        acl_py.set_device(0)
        st = lib.aclrtMalloc(ffi.new("void **"), 0, 0)   # size 0: 100000
        try:
            errors.check(st, "aclrtMalloc")
        except errors.AclError as e:
            results[i] = e

    threads = [threading.Thread(target=fail, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4
    for e in results.values():
        assert e.code == 100000 and "size" in e.message
