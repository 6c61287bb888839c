"""Checks acl-py's declarations against a set of CANN headers with the C and C++ compilers.

acl-py talks to CANN through cffi's ABI mode, which trusts the declarations in
bindings/include blindly: a parameter in the wrong order or an enum value that drifted would
pass every Python test and corrupt memory on the device. This tool turns each declaration, as
cffi parsed it (typedefs resolved: exactly what the binding passes at run time), into C that
the compiler checks against the headers in CANN_INCLUDE_DIR:

- every function: the header must declare it, with the same type (``__typeof__`` compared
  with our prototype), and in C it is redeclared so a conflict shows both types;
- every enum type: its tag (``enum aclrtMemcpyKind`` where acl-py's has one), size and
  signedness, and every enumerator's value;
- every integer constant (status codes): its value (``static const int`` is not a constant
  expression in C, so C checks it through a call the optimizer must remove, C++ with
  ``static_assert``);
- every typedef: the same type; every struct: its typedef names ``struct <name>``, and a
  struct with fields (passed by pointer) has the same size, field offsets and field types.

Header by header, as a program includes them: each of acl-py's headers is compiled alone, in
its own translation unit, and everything acl-py declares in it or in the headers it includes
must be visible through CANN's header of the same name. So a program written against acl-py's
headers (the emulator prefix) compiles unchanged against a CANN install: acl-py's headers
offer nothing that CANN's, included the same way, do not. Every header gets a C++ pass; the
ones CANN keeps C-compatible also a C pass (``aclnn/acl_meta.h`` is C++ only in CANN, and so
is every header including it). When CANN_INCLUDE_DIR has ``aclnnop/level2/``, the deprecated
copies of the operator headers CANN installs there are checked the same way.

Emulator-only declarations (aclemu/aclemu.h) are not part of CANN and are skipped.

Usage: python tools/abi_check.py [CANN_INCLUDE_DIR] [--declarations DIR] [--header H] [--keep DIR]
  CANN_INCLUDE_DIR  default: the emulator prefix's include/ (what the emulator was built with);
                    on a CANN machine: $ASCEND_HOME_PATH/include
Exit status 0 when everything matches, 1 with the compiler's messages when anything differs.
Environment: CC (default cc), CXX (default c++; the C++ passes are skipped when it is absent).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent

# CANN's aclnn/acl_meta.h includes <cstdint> and declares a constexpr: C++ only, and so is
# every header that includes it (aclnn/aclnn_base.h, the operator headers).
CXX_ONLY_HEADERS = frozenset({"aclnn/acl_meta.h"})
LEVEL2 = "aclnnop/level2"

C_FLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1"]
CXX_FLAGS = ["-std=c++17", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-x", "c++"]
# CANN's level2/ copies carry a deprecation #warning.
LEVEL2_FLAGS = ["-Wno-cpp"]

_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def _build_ffi():
    path = ROOT / "bindings" / "build_ffi.py"
    spec = importlib.util.spec_from_file_location("acl_py_build_ffi", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Declarations:
    """acl-py's CANN declarations: one cffi FFI holding all of them, and which header (path
    relative to the include root) declares which (cffi's declaration keys)."""

    def __init__(self, ffi, root: Path):
        self.ffi = ffi
        self.root = root
        self.owned: dict[str, list[str]] = {}

    def headers(self) -> list[str]:
        return sorted(p.relative_to(self.root).as_posix() for p in self.root.rglob("*.h"))

    def closure(self, header: str) -> list[str]:
        """``header`` and every header of ours it includes, directly or not (quoted includes
        resolved as the preprocessor does: beside the including file, then the root)."""
        seen: list[str] = []
        todo = [header]
        while todo:
            h = todo.pop()
            if h in seen:
                continue
            seen.append(h)
            path = self.root / h
            for inc in _INCLUDE.findall(path.read_text()):
                for cand in (path.parent / inc, self.root / inc):
                    if cand.is_file():
                        todo.append(cand.resolve().relative_to(self.root.resolve()).as_posix())
                        break
        return seen

    def visible(self, header: str) -> list[str]:
        keys: list[str] = []
        for h in self.closure(header):
            keys += self.owned.get(h, [])
        return keys

    def c_compatible(self, header: str) -> bool:
        return not CXX_ONLY_HEADERS.intersection(self.closure(header))


def load_declarations(declarations: Path | None = None) -> Declarations:
    """acl-py's CANN declarations (no emulator-only ones). ``declarations`` replaces
    bindings/include (the same relative header paths) -- for tests."""
    import cffi
    bf = _build_ffi()
    root = Path(declarations) if declarations is not None else bf.INCLUDE
    ffi = cffi.FFI()
    decls = Declarations(ffi, root)
    parsed = ffi._parser._declarations  # the parsed cdef; build_ffi relies on it too
    for header, library in bf.HEADERS:
        if library == "emulator":
            continue
        rel = header.relative_to(bf.INCLUDE).as_posix()
        before = set(parsed)
        ffi.cdef(bf.cdef_section(root / rel))
        decls.owned[rel] = [k for k in parsed if k not in before]
    return decls


def _spell(c_type: str) -> str:
    """cffi spells C's boolean `_Bool`; `bool` means the same in C (stdbool.h) and C++."""
    return re.sub(r"\b_Bool\b", "bool", c_type)


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def generate(decls: Declarations, header: str,
             include_as: str | None = None) -> tuple[str, dict[str, int]]:
    """The C/C++ source that includes CANN's ``include_as`` (default: ``header``) alone and
    checks every declaration acl-py's ``header`` makes visible; and counts per kind."""
    from cffi import model
    ffi = decls.ffi
    parsed = ffi._parser._declarations
    head = [
        "/* Generated by acl-py tools/abi_check.py: what acl-py's " + header + " declares (as",
        " * cffi parsed it), checked against the CANN header of that name. Do not edit. */",
        f'#include "{include_as or header}"',
        "#include <stddef.h>",
        "#include <stdint.h>",
        "#ifdef __cplusplus",
        "#include <type_traits>",
        "#define ACL_PY_SAME(a, b) (std::is_same<a, b>::value)",
        "#define ACL_PY_TYPEOF(x) decltype(x)",
        "#else",
        "#include <assert.h> /* static_assert */",
        "#include <stdbool.h>",
        "#define ACL_PY_SAME(a, b) __builtin_types_compatible_p(a, b)",
        "#define ACL_PY_TYPEOF(x) __typeof__(x)",
        "#endif",
        "",
    ]
    body: list[str] = []
    constants: list[tuple[str, int]] = []
    counts = {"functions": 0, "enum values": 0, "constants": 0, "typedefs": 0, "structs": 0}
    checked_enums: set[str] = set()

    def enum_spelling(tp) -> str:
        # A tagged enum is spelled "enum TAG" (checks that CANN's has that tag too); an
        # anonymous one (cffi names it "$NAME") only by its typedef name.
        return f"enum {tp.name}" if f"enum {tp.name}" in parsed else tp.name.lstrip("$")

    def check_enum(tp) -> None:
        name = enum_spelling(tp)
        if name in checked_enums:
            return
        checked_enums.add(name)
        size = ffi.sizeof(name)
        signed = int(ffi.cast(name, -1)) < 0
        sign_msg = _c_string(f"{name}: acl-py assumes a {'signed' if signed else 'unsigned'} type")
        body.append(f"/* {name} */")
        body.append(f"static_assert(sizeof({name}) == {size}, "
                    f"{_c_string(f'{name}: acl-py assumes {size} bytes')});")
        body.append("#ifdef __cplusplus")
        body.append(f"static_assert(std::is_signed<std::underlying_type<{name}>::type>::value == "
                    f"{'true' if signed else 'false'}, {sign_msg});")
        body.append("#else")
        body.append(f"static_assert(((long long)({name})-1 < 0) == {int(signed)}, {sign_msg});")
        body.append("#endif")
        for enumerator, value in zip(tp.enumerators, tp.enumvalues):
            body.append(f"static_assert(({enumerator}) == ({value}), "
                        f"{_c_string(f'{name} {enumerator}: acl-py declares {value}')});")
            body.append("#ifdef __cplusplus")
            body.append(f"static_assert(ACL_PY_SAME(decltype({enumerator}), {name}), "
                        f"{_c_string(f'{enumerator} is not an enumerator of {name}')});")
            body.append("#endif")
            counts["enum values"] += 1

    def type_spelling(ftype) -> str | None:
        # A struct CANN declares as `typedef struct { ... } NAME;` is "$NAME" to cffi and is
        # spelled by its typedef name; one with no name at all ("$1") has no spelling (None).
        if isinstance(ftype, model.StructOrUnion) and ftype.name.startswith("$"):
            tag = ftype.name[1:]
            return tag if f"typedef {tag}" in parsed else None
        return _spell(ftype.get_c_name())

    def check_layout(name, tp) -> None:
        # A struct passed by pointer to CANN (aclrtUtilizationInfo): its size, and each
        # field's offset and type, as cffi lays it out.
        size = ffi.sizeof(name)
        body.append(f"static_assert(sizeof({name}) == {size}, "
                    f"{_c_string(f'{name}: acl-py assumes {size} bytes')});")
        for field, ftype in zip(tp.fldnames, tp.fldtypes):
            offset = ffi.offsetof(name, field)
            body.append(f"static_assert(offsetof({name}, {field}) == {offset}, "
                        f"{_c_string(f'{name}.{field}: acl-py assumes offset {offset}')});")
            spelled = type_spelling(ftype)
            if spelled is None:
                # A member of a nameless struct or union type (aclrtRandomNumFuncParaInfo's
                # paramInfo): its size, and its own members' types.
                size = ffi.sizeof(dict(ffi.typeof(name).fields)[field].type)
                body.append(f"static_assert(sizeof((({name} *)0)->{field}) == {size}, "
                            f"{_c_string(f'{name}.{field}: acl-py assumes {size} bytes')});")
                for sub, subtype in zip(ftype.fldnames, ftype.fldtypes):
                    sub_spelled = type_spelling(subtype)
                    member = f"(({name} *)0)->{field}.{sub}"
                    body.append(f"static_assert(ACL_PY_SAME(ACL_PY_TYPEOF({member}), "
                                f"{sub_spelled}), "
                                f"{_c_string(f'{name}.{field}.{sub}: acl-py declares {sub_spelled}')});")
                continue
            body.append(f"static_assert(ACL_PY_SAME(ACL_PY_TYPEOF((({name} *)0)->{field}), "
                        f"{spelled}), {_c_string(f'{name}.{field}: acl-py declares {spelled}')});")

    for key in decls.visible(header):
        tp, _quals = parsed[key]
        kind, _, name = key.partition(" ")
        if kind == "function":
            raw = tp.as_raw_function()
            proto = _spell(raw.get_c_name(f" {name}"))
            alias = f"acl_py_abi_fn_{name}"
            body.append(f"/* {name} */")
            body.append(f"typedef {_spell(raw.get_c_name(f' {alias}'))};")
            body.append(f"static_assert(ACL_PY_SAME(ACL_PY_TYPEOF({name}), {alias}), "
                        f"{_c_string(f'{name}: the header declares another type; acl-py declares {proto}')});")
            # In C a conflicting redeclaration is an error that prints both types; in C++ it
            # would only add an overload, so the assertion above is the check there.
            body.append("#ifndef __cplusplus")
            body.append(f"{proto};")
            body.append("#endif")
            counts["functions"] += 1
        elif kind == "macro":
            if not isinstance(tp, int):
                raise SystemExit(f"abi-check: {name}: only integer constants are supported")
            constants.append((name, tp))
            counts["constants"] += 1
        elif kind in ("typedef", "anonymous", "enum"):
            if isinstance(tp, model.EnumType):
                check_enum(tp)
                if kind == "typedef":
                    spelled = enum_spelling(tp)
                    if spelled != name:
                        body.append(f"static_assert(ACL_PY_SAME({name}, {spelled}), "
                                    f"{_c_string(f'{name} is not a typedef of {spelled}')});")
                    counts["typedefs"] += 1
            elif isinstance(tp, model.StructOrUnion):
                if kind == "typedef":
                    # An anonymous struct (cffi names it "$NAME", as CANN declares
                    # aclrtRandomNumTaskInfo) is known by its typedef name only.
                    if not tp.name.startswith("$"):
                        body.append(f"static_assert(ACL_PY_SAME({name}, struct {tp.name}), "
                                    f"{_c_string(f'{name} is not a typedef of struct {tp.name}')});")
                    if tp.fldtypes is not None:
                        check_layout(name, tp)
                    counts["structs"] += 1
            elif kind == "typedef":
                alias = f"acl_py_abi_td_{name}"
                body.append(f"typedef {_spell(tp.get_c_name(' ' + alias))};")
                body.append(f"static_assert(ACL_PY_SAME({name}, {alias}), "
                            f"{_c_string(f'typedef {name}: acl-py declares {_spell(tp.get_c_name())}')});")
                counts["typedefs"] += 1
            else:
                raise SystemExit(f"abi-check: unsupported declaration {key}")
        elif kind == "struct":
            continue  # checked through its typedef
        else:
            raise SystemExit(f"abi-check: unsupported declaration {key}")

    # Integer constants: macros and enumerators are constant expressions, but CANN declares
    # its ACL status codes as `static const int`, which C does not accept in a static assertion.
    tail = ["#ifdef __cplusplus"]
    tail += [f"static_assert(({n}) == ({v}), {_c_string(f'{n}: acl-py declares {v}')});"
             for n, v in constants]
    tail += ["#else",
             "/* Each failure calls a function marked `error`: the optimizer removes the call",
             " * when the values agree, and the compiler reports it (with the message) when not. */"]
    for n, v in constants:
        tail.append(f"extern void acl_py_abi_bad_{n}(void) __attribute__((error("
                    f"{_c_string(f'{n}: the header value differs from acl-py value {v}')})));")
    tail.append("void acl_py_abi_check_constants(void);")
    tail.append("void acl_py_abi_check_constants(void) {")
    tail += [f"    if (!(({n}) == ({v}))) acl_py_abi_bad_{n}();" for n, v in constants]
    tail += ["}", "#endif", ""]
    return "\n".join(head + body + [""] + tail), counts


def _compile(cmd: list[str]) -> tuple[int, str]:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return proc.returncode, (proc.stdout + proc.stderr).strip()


class Unit(NamedTuple):
    """One translation unit: CANN's ``include_as`` checked for what acl-py's ``header``
    declares, in one language."""
    header: str
    include_as: str
    language: str  # "C11" or "C++17"

    @property
    def label(self) -> str:
        return f"{self.include_as} ({self.language})"


def plan(decls: Declarations, include_dir: Path, headers: list[str] | None = None,
         cxx_available: bool = True) -> list[Unit]:
    """The translation units to compile: every header of ours (or ``headers``), in C++ and,
    when CANN keeps it C-compatible, in C; plus CANN's level2/ copies of the operator headers
    when ``include_dir`` has them."""
    units: list[Unit] = []
    for header in headers or decls.headers():
        names = [header]
        if header.startswith("aclnnop/") and header.count("/") == 1 \
                and (include_dir / LEVEL2).is_dir():
            names.append(f"{LEVEL2}/{header.split('/', 1)[1]}")
        for name in names:
            if decls.c_compatible(header):
                units.append(Unit(header, name, "C11"))
            if cxx_available:
                units.append(Unit(header, name, "C++17"))
    return units


def check(include_dir: Path, declarations: Path | None = None, keep: Path | None = None,
          cc: str | None = None, cxx: str | None = None,
          extra_flags: list[str] | None = None,
          headers: list[str] | None = None) -> tuple[bool, str]:
    """Runs the check (on every header of ours, or only ``headers``); returns (ok, report)."""
    include_dir = Path(include_dir).resolve()
    decls = load_declarations(declarations)
    cc_cmd = shlex.split(cc or os.environ.get("CC") or "cc")
    cxx_cmd = shlex.split(cxx or os.environ.get("CXX") or "c++")
    lines = []
    cxx_available = shutil.which(cxx_cmd[0]) is not None
    if not cxx_available:
        lines.append(f"abi-check: note: no C++ compiler ({cxx_cmd[0]}); C passes only")
    units = plan(decls, include_dir, headers, cxx_available)
    missing = sorted({u.include_as for u in units if not (include_dir / u.include_as).is_file()})
    if missing:
        return False, f"abi-check: {include_dir} lacks {', '.join(missing)}"
    # -isystem: the vendor's headers may warn under -Wextra; only our generated code must not.
    flags = ["-isystem", str(include_dir), *(extra_flags or [])]
    # The generated sources are removed on success and kept on failure, to be read.
    out_dir = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="acl-py-abi-"))
    out_dir.mkdir(parents=True, exist_ok=True)

    def prepare(unit: Unit) -> tuple[Unit, Path, list[str]]:
        source, _counts = generate(decls, unit.header, unit.include_as)
        stem = re.sub(r"[^A-Za-z0-9]+", "_", unit.include_as.removesuffix(".h"))
        extra = LEVEL2_FLAGS if unit.include_as.startswith(LEVEL2 + "/") else []
        if unit.language == "C11":
            src = out_dir / f"{stem}.c"
            cmd = [*cc_cmd, *C_FLAGS, *extra, *flags, "-c", "-o", os.devnull, str(src)]
        else:
            src = out_dir / f"{stem}.cpp"
            cmd = [*cxx_cmd, *CXX_FLAGS, *extra, *flags, str(src)]
        src.write_text(source)
        return unit, src, cmd

    def run(job: tuple[Unit, Path, list[str]]) -> tuple[Unit, Path, list[str], int, str]:
        rc, output = _compile(job[2])
        return (*job, rc, output)

    jobs = [prepare(u) for u in units]  # cffi's type parser is not thread-safe
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        results = list(pool.map(run, jobs))
    failed = [r for r in results if r[3] != 0]
    for unit, src, cmd, _rc, output in failed:
        lines.append(f"abi-check: {unit.label} FAILED ({shlex.join(cmd)}):\n{output}")
    # Each declaration once, however many headers make it visible.
    counts = {"functions": 0, "enum values": 0, "constants": 0, "typedefs": 0, "structs": 0}
    all_keys = {k for h in {u.header for u in units} for k in decls.visible(h)}
    parsed = decls.ffi._parser._declarations
    for key in all_keys:
        kind = key.partition(" ")[0]
        tp = parsed[key][0]
        if kind == "function":
            counts["functions"] += 1
        elif kind == "macro":
            counts["constants"] += 1
        elif kind == "typedef":
            counts["structs" if hasattr(tp, "fldtypes") and not hasattr(tp, "enumerators")
                   else "typedefs"] += 1
        if kind in ("enum", "anonymous") and hasattr(tp, "enumerators"):
            counts["enum values"] += len(tp.enumerators)
    summary = ", ".join(f"{n} {k}" for k, n in counts.items())
    c_units = sum(u.language == "C11" for u in units)
    done = f"{len(units)} translation units: {c_units} C11, {len(units) - c_units} C++17"
    if not failed:
        lines.append(f"abi-check: OK: acl-py's declarations match {include_dir} "
                     f"({summary}; {done})")
        if not keep:
            shutil.rmtree(out_dir, ignore_errors=True)
    else:
        lines.append(f"abi-check: acl-py's declarations differ from {include_dir} in "
                     f"{', '.join(u.label for u, *_ in failed)}: see the compiler messages "
                     f"above; generated sources: {out_dir}")
    return not failed, "\n".join(lines)


def default_include_dir() -> Path:
    # Not via acl_py._loader: the tool must work before acl_py/_ffi.py exists.
    prefix = os.environ.get("ACL_PY_EMULATOR_PREFIX") or str(ROOT / "acl_py" / "_emulator")
    return Path(prefix) / "include"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("include_dir", nargs="?", type=Path,
                    help="CANN include directory (default: the emulator prefix's include/)")
    ap.add_argument("--declarations", type=Path, default=None,
                    help="use this copy of bindings/include instead (for tests)")
    ap.add_argument("--header", action="append", default=None,
                    help="check only this header of ours (repeatable), e.g. acl/acl_rt.h")
    ap.add_argument("--keep", type=Path, default=None,
                    help="write the generated sources into this directory")
    ap.add_argument("--cflags", default="",
                    help="extra compiler flags, e.g. more -I for a vendor layout")
    args = ap.parse_args(argv)
    include_dir = args.include_dir or default_include_dir()
    if not include_dir.is_dir():
        print(f"abi-check: {include_dir} is not a directory"
              + ("" if args.include_dir else ": build the emulator first (make build)"),
              file=sys.stderr)
        return 1
    ok, report = check(include_dir, args.declarations, args.keep,
                       extra_flags=shlex.split(args.cflags), headers=args.header)
    print(report, file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
