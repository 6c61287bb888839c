"""Builds acl-py's cffi module from the C headers in bindings/include (the single source of truth).

Out-of-line ABI mode: the declarations are parsed here, at build time, into the pure-Python
module ``acl_py/_ffi.py``; at run time acl-py only ``dlopen``s the libraries. Nothing is
compiled against the vendor's headers.

The headers are laid out as a CANN install lays out its own (``acl/``, ``acl/error_codes/``,
``aclnn/``, ``aclnn/opdev/``, ``aclnnop/``) and are real C/C++ headers, compiled by the emulator
and by programs. cffi reads the section of each between ``/* acl-py:cdef-begin */`` and
``/* acl-py:cdef-end */``, after removing the export macros (``ACL_FUNC_VISIBILITY``,
``ACLNN_API``) that CANN puts before each function and cffi cannot parse; the rest of a section
must be plain C (typedefs, enums, prototypes, integer ``#define``s and ``static const int``s).
The header a function is declared in decides the library that must export it; that table is
written beside ``ffi`` so the loader binds every function to its own library.

Usage: python bindings/build_ffi.py [OUTPUT_DIR]   (default: acl_py/ next to this folder)
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import cffi

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
INCLUDE = HERE / "include"
EMULATOR_INCLUDE = ROOT / "emulator" / "include"

# (header, library that exports its functions), in dependency order. Headers without a cdef
# section (acl/acl.h, aclnnop/aclnn_util.h: includes and macros only) are not listed.
HEADERS = [
    (INCLUDE / "acl" / "error_codes" / "rt_error_codes.h", "ascendcl"),
    (INCLUDE / "acl" / "acl_base.h", "ascendcl"),
    (INCLUDE / "acl" / "acl_rt.h", "ascendcl"),
    (INCLUDE / "aclnn" / "opdev" / "op_errno.h", "nnopbase"),
    (INCLUDE / "aclnn" / "acl_meta.h", "nnopbase"),
    (INCLUDE / "aclnn" / "aclnn_base.h", "nnopbase"),
    (INCLUDE / "aclnnop" / "aclnn_layer_norm_backward.h", "opapi"),
    (INCLUDE / "aclnnop" / "aclnn_add.h", "opapi"),
    (INCLUDE / "aclnnop" / "aclnn_layer_norm.h", "opapi"),
    (INCLUDE / "aclnnop" / "aclnn_rms_norm.h", "opapi"),
    (INCLUDE / "aclnnop" / "aclnn_add_rms_norm.h", "opapi"),
    (INCLUDE / "aclnnop" / "aclnn_rms_norm_grad.h", "opapi"),
    (INCLUDE / "aclnnop" / "aclnn_group_norm.h", "opapi"),
    (INCLUDE / "aclnnop" / "aclnn_gemma_rms_norm.h", "opapi"),
    (INCLUDE / "aclnnop" / "aclnn_inplace_add_rms_norm.h", "opapi"),
    (INCLUDE / "aclnnop" / "aclnn_add_layer_norm.h", "opapi"),
    (INCLUDE / "aclnnop" / "aclnn_deep_norm.h", "opapi"),
    (INCLUDE / "aclnnop" / "aclnn_group_norm_silu.h", "opapi"),
    (INCLUDE / "aclnnop" / "aclnn_add_layer_norm_grad.h", "opapi"),
    (INCLUDE / "aclnnop" / "aclnn_batch_norm.h", "opapi"),
    (INCLUDE / "aclnnop" / "aclnn_batch_norm_backward.h", "opapi"),
    (INCLUDE / "aclnnop" / "aclnn_batch_norm_gather_stats_with_counts.h", "opapi"),
    (INCLUDE / "aclnnop" / "aclnn_batch_norm_elemt.h", "opapi"),
    (INCLUDE / "aclnnop" / "aclnn_deep_norm_grad.h", "opapi"),
    (INCLUDE / "aclnnop" / "aclnn_group_norm_backward.h", "opapi"),
    (INCLUDE / "aclnnop" / "aclnn_batch_norm_backward_reduce.h", "opapi"),
    (INCLUDE / "aclnnop" / "aclnn_batch_norm_elemt_backward.h", "opapi"),
    (INCLUDE / "aclnnop" / "aclnn_instance_norm.h", "opapi"),
    (INCLUDE / "aclnnop" / "aclnn_rms_norm_quant.h", "opapi"),
    (INCLUDE / "aclnnop" / "aclnn_batch_norm_stats.h", "opapi"),
    (INCLUDE / "aclnnop" / "aclnn_batch_norm_reduce.h", "opapi"),
    (INCLUDE / "aclnnop" / "aclnn_add_rms_norm_quant.h", "opapi"),
    (INCLUDE / "aclnnop" / "aclnn_add_rms_norm_dynamic_quant.h", "opapi"),
    (INCLUDE / "aclnnop" / "aclnn_add_rms_norm_dynamic_quant_v2.h", "opapi"),
    (INCLUDE / "aclnnop" / "aclnn_add_layer_norm_quant.h", "opapi"),
    # Emulator-only introspection: exported by the emulator's libascendcl.so, bound only when
    # the emulator backend is active.
    (EMULATOR_INCLUDE / "aclemu" / "aclemu.h", "emulator"),
]

_SECTION = re.compile(r"/\* acl-py:cdef-begin \*/(.*?)/\* acl-py:cdef-end \*/", re.S)
# The macros CANN writes before each exported function (empty or a visibility attribute).
_EXPORT_MACROS = re.compile(r"\b(?:ACL_FUNC_VISIBILITY|ACLNN_API)\b[ \t]*")


def cdef_section(header: Path) -> str:
    """The declarations cffi reads from ``header``: its cdef sections, export macros removed."""
    text = header.read_text()
    sections = _SECTION.findall(text)
    if not sections:
        raise SystemExit(f"{header}: no acl-py:cdef section")
    return _EXPORT_MACROS.sub("", "\n".join(sections))


def _functions(ffi: cffi.FFI) -> set[str]:
    # cffi keeps its parsed declarations keyed "function NAME"; this is the one place that
    # relies on it, and only at build time.
    return {k.split(" ", 1)[1] for k in ffi._parser._declarations if k.startswith("function ")}


def make_builder() -> tuple[cffi.FFI, dict[str, str]]:
    ffi = cffi.FFI()
    library_of: dict[str, str] = {}
    for header, library in HEADERS:
        before = _functions(ffi)
        ffi.cdef(cdef_section(header))
        for name in sorted(_functions(ffi) - before):
            library_of[name] = library
    ffi.set_source("acl_py._ffi", None)
    return ffi, library_of


def build(out_dir: Path) -> Path:
    ffi, library_of = make_builder()
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / "_ffi.py"
    tmp = out_dir / "_ffi.py.tmp"
    ffi.emit_python_code(str(tmp))
    with open(tmp, "a") as f:
        f.write("\n# Library that must export each declared function (from its header).\n")
        f.write("LIBRARY_OF = {\n")
        for name in sorted(library_of):
            f.write(f"    {name!r}: {library_of[name]!r},\n")
        f.write("}\n")
    os.replace(tmp, target)
    return target


# cffi's setuptools hook (cffi_modules) is not used: setup.py calls build() itself so the same
# code serves `pip install .`, editable installs and the Makefile.
if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "acl_py"
    print(f"acl-py: wrote {build(out)}")
