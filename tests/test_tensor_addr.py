"""The aclSet*TensorAddr calls from C (tests/c/tensor_addr.cpp, public headers only, built
against the emulator's prefix): a repeatable aclnnAdd, aclnnLayerNorm and
aclnnLayerNormBackward executor re-pointed at new buffers gives, bit for bit, what a fresh
executor gives on those buffers, and leaves the first buffers' results alone; the index,
NULL, alignment, single-use and foreign-tensor cases get the statuses the vendor's code and
docs give (hicann/opbase src/nnopbase/common/api/acl_op_api.cpp, docs/en/api/nnopbase/aclnn/
aclSet*TensorAddr.md) and change nothing, except a NULL executor, after which CANN has
already updated the tensor; nothing is left alive."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from test_cpp_runtime import _env, build

EXPECTED = """\
add: re-pointed run matches a fresh one: yes
add: the first run's results untouched: yes, differ: yes
input index past the inputs: 161002 (aclSetInputTensorAddr: index (2) is out of range: aclnnAdd has 2 inputs (index them from 0))
output index past the outputs: 161002 (aclSetOutputTensorAddr: index (1) is out of range: aclnnAdd has 1 output (index them from 0))
tensor index past all tensors: 161002 (AclSetTensorAddr: index (3) is out of range: aclnnAdd has 3 tensors (index them from 0))
another input's tensor: 161002
a tensor the executor does not have: 161002
NULL tensor: 561103
address not 32-byte aligned: 161002
add: refusals changed nothing: yes
NULL executor: 561103
add: after a NULL executor the tensor's new address is used: yes
relativeIndex past the list: 161002 (aclSetDynamicInputTensorAddr: relativeIndex (1) is out of range: tensors holds 1 aclTensor)
irIndex past the outputs: 161002 (aclSetDynamicOutputTensorAddr: irIndex (1) is out of range: aclnnAdd has 1 output (index them from 0))
NULL list: 561103
list element not the output's tensor: 161002
single-use executor: 161002, says single-use: yes
destroyed executor: 161002
layer norm: re-pointed run matches a fresh one: yes
layer norm: the first run's results untouched: yes
an optional input given as NULL: 161002 (aclSetInputTensorAddr: index 1 is aclnnLayerNorm's input weightOptional, which phase one was given as NULL: it has no address to update)
layer norm backward: re-pointed run matches a fresh one: yes
layer norm backward: the first run's results untouched: yes
biasOptional given as NULL: 161002 (aclSetInputTensorAddr: index 5 is aclnnLayerNormBackward's input biasOptional, which phase one was given as NULL: it has no address to update)
input index past the inputs: 161002 (aclSetInputTensorAddr: index (6) is out of range: aclnnLayerNormBackward has 6 inputs (index them from 0))
live: 0 tensors, 0 lists, 0 executors, 0 scalars, 0 arrays, 0 device allocations
done
"""


@pytest.fixture(scope="module")
def program():
    return build("tensor_addr", defines=("ACL_PY_EMULATOR",))


def test_repointed_executors_run_on_the_new_buffers_and_refusals_have_canns_codes(program):
    r = subprocess.run([program], capture_output=True, text=True, timeout=120, env=_env())
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == EXPECTED


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
@pytest.mark.skipif(bool(os.environ.get("ACL_PY_SANITIZER")),
                    reason="valgrind cannot run an AddressSanitizer build; ASan checks it instead")
def test_repointing_is_clean_under_valgrind(program):
    """No invalid access and no leak in the executors' address paths, as memcheck sees it."""
    cmd = ["valgrind", "--quiet", "--error-exitcode=99", "--leak-check=full",
           "--errors-for-leak-kinds=definite,indirect", "--show-leak-kinds=definite,indirect",
           program]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=_env())
    assert r.returncode == 0, r.stderr[-4000:]
    assert r.stdout == EXPECTED
