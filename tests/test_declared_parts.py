"""Each declared operator's ``parts`` (``acl_py.ops.configured``: the part families the vendor
file and rule its ``source`` names give a kernel) agree with phase one on this process's part:
where the declaration has a kernel, a smoke case of the operator runs on device tensors; where
it has none, phase one refuses that call with the vendor's status (561003 where the framework
finds no kernel for a generated interface, 561103 where an op_api's L0 op finds none and gives
back no tensor, 161002 where an op_api's platform or dtype check refuses the part), naming
the part. An operator's own tests skip a part without a kernel pointing here
(tests/_part_runs.py ``needs_kernel``); this file runs on every part (test_on_other_parts).
"""
from __future__ import annotations

import numpy as np
import pytest

import acl_py
from acl_py.errors import AclError
from acl_py.ops import DECLARED

from _part_runs import other_parts, run_on_parts
from test_declared_out import _device_run

# The statuses a part without a kernel is refused with (see the module doc)
NO_KERNEL_CODES = (161002, 561003, 561103)


def _values(declared):
    """The inputs of the operator's first smoke case without a BFLOAT16 tensor: the Atlas
    training and inference series refuse BFLOAT16 whatever the operator, which would hide
    whether the kernel is there."""
    bf16 = acl_py.dtypes.bfloat16()
    for _, make in declared.smoke_cases:
        values = tuple(make())
        if not any(isinstance(v, np.ndarray) and v.dtype == bf16 for v in values):
            return values
    raise AssertionError(f"{declared.short_name} has no smoke case without bfloat16")


@pytest.mark.parametrize("name", sorted(n for n, d in DECLARED.items() if d.parts is not None))
def test_phase_one_agrees_with_the_declared_parts(name):
    declared = DECLARED[name]
    part = acl_py.soc_name()
    values = _values(declared)
    nothing = (None,) * len(declared.outputs)
    if declared.runs_on(part):
        _device_run(declared, values, nothing)
        return
    with pytest.raises(AclError) as ei:
        _device_run(declared, values, nothing)
    e = ei.value
    assert e.call == f"{declared.name}GetWorkspaceSize" and e.code in NO_KERNEL_CODES, e
    assert part in e.message, e


test_on_other_parts = run_on_parts(other_parts(), "agrees_with_the_declared_parts",
                                   skips=False)
