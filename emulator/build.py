"""Builds the CPU emulator of CANN into a prefix laid out like a CANN install.

    <prefix>/lib64/libascendcl.so     runtime        (emulator/src/runtime/*.c)
    <prefix>/lib64/libnnopbase.so     acl_meta.h     (emulator/src/meta/*.c)
    <prefix>/lib64/libopapi.so        every operator (emulator/src/ops/*.c, ops_math/*.c)
    <prefix>/lib64/libopapi_nn.so     the nn operators (ops/), as newer releases split them
    <prefix>/lib64/libopapi_math.so   the math operators (ops_math/)
    <prefix>/include/                 bindings/include + emulator/include (aclemu/)

The sources are compiled against bindings/include, the same headers cffi reads, so the C
compiler proves the emulator implements exactly what acl-py declares. Pure Python on purpose:
`pip install .`, the Makefile and the sanitizer build all call this one script.

Usage: python emulator/build.py [--prefix DIR] [--sanitize] [--force] [--quiet]
Environment: CC (default cc), ACL_EMU_CFLAGS (extra compiler flags).
"""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SRC = HERE / "src"
INCLUDES = [ROOT / "bindings" / "include", HERE / "include"]
DEFAULT_PREFIX = ROOT / "acl_py" / "_emulator"

CFLAGS = ["-std=c11", "-D_GNU_SOURCE", "-fPIC", "-pthread", "-O3", "-g",
          "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter"]
# Undefined behaviour traps (SIGILL) instead of calling the UBSan runtime: in a process that
# also loads ASan, UBSan's runtime shares ASan's report path and exit code through symbol
# interposition, so its reports reach stderr only (lost when a test captures it) and its exit
# status follows ASan's. A trap becomes an ASan "deadly signal" report, in ASan's log, with the
# file and line of the undefined operation (tools/sanitize.py).
SANITIZE_FLAGS = ["-O1", "-fsanitize=address,undefined", "-fno-omit-frame-pointer",
                  "-fno-sanitize-recover=undefined", "-fsanitize-undefined-trap-on-error"]

# (library file, source folders, libraries it links against). Newer CANN releases split the
# operators by domain (libopapi_nn.so, libopapi_math.so, ...); libopapi.so has them all.
LIBRARIES = [
    ("libascendcl.so", ("runtime",), ["-lm"]),
    ("libnnopbase.so", ("meta",), ["-lascendcl"]),
    ("libopapi.so", ("ops", "ops_math"), ["-lnnopbase", "-lascendcl", "-lm"]),
    ("libopapi_nn.so", ("ops",), ["-lnnopbase", "-lascendcl", "-lm"]),
    ("libopapi_math.so", ("ops_math",), ["-lnnopbase", "-lascendcl", "-lm"]),
]


def _inputs() -> list[Path]:
    files = [Path(__file__)]
    for d in [SRC, *INCLUDES]:
        files += [p for p in d.rglob("*") if p.suffix in (".c", ".h")]
    return files


def _up_to_date(prefix: Path) -> bool:
    outs = [prefix / "lib64" / name for name, _, _ in LIBRARIES]
    if not all(p.exists() for p in outs):
        return False
    newest_in = max(p.stat().st_mtime for p in _inputs())
    return min(p.stat().st_mtime for p in outs) >= newest_in


def _install_headers(prefix: Path) -> None:
    inc = prefix / "include"
    if inc.exists():
        shutil.rmtree(inc)
    for src in INCLUDES:
        shutil.copytree(src, inc, dirs_exist_ok=True)


def build(prefix: Path = DEFAULT_PREFIX, sanitize: bool = False, force: bool = False,
          quiet: bool = False, extra_cflags: tuple[str, ...] = ()) -> Path:
    prefix = Path(prefix).resolve()
    if not force and _up_to_date(prefix):
        return prefix
    cc = shlex.split(os.environ.get("CC", "cc"))
    flags = CFLAGS + (SANITIZE_FLAGS if sanitize else [])
    flags += shlex.split(os.environ.get("ACL_EMU_CFLAGS", "")) + list(extra_cflags)
    incs = [f"-I{p}" for p in INCLUDES] + [f"-I{SRC}"]
    lib64 = prefix / "lib64"
    lib64.mkdir(parents=True, exist_ok=True)
    folders = sorted({folder for _, fs, _ in LIBRARIES for folder in fs})
    sources = {f: sorted((SRC / f).glob("*.c")) for f in folders}
    for f in folders:
        if not sources[f]:
            raise SystemExit(f"emulator: no sources in {SRC / f}")
    with tempfile.TemporaryDirectory(prefix="aclemu-obj-") as tmpdir:
        # Each source is compiled once, all of them in parallel (the operator file alone is
        # most of the time; libopapi.so and libopapi_nn.so link the same objects).
        def compile_one(src: Path) -> str:
            obj = Path(tmpdir) / f"{src.parent.name}_{src.stem}.o"
            subprocess.run([*cc, *flags, *incs, "-c", "-o", str(obj), str(src)], check=True)
            return str(obj)

        jobs = [src for f in folders for src in sources[f]]
        if not quiet:
            print(f"emulator: compiling {len(jobs)} files", flush=True)
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            objs = dict(zip(jobs, pool.map(compile_one, jobs)))
        for name, lib_folders, libs in LIBRARIES:
            tmp = lib64 / (name + ".tmp")
            # The SONAME lets the dynamic linker match a library's dependencies (libnnopbase.so
            # needs libascendcl.so) to the copies acl-py already opened by absolute path;
            # without it they are searched for again, LD_LIBRARY_PATH first, where "." or an
            # empty element would load a libascendcl.so planted in the current directory.
            lib_objs = [objs[s] for f in lib_folders for s in sources[f]]
            cmd = [*cc, *flags, "-shared", "-o", str(tmp), *lib_objs,
                   f"-L{lib64}", f"-Wl,-soname,{name}", "-Wl,-rpath,$ORIGIN",
                   "-Wl,--no-undefined", *libs]
            if not quiet:
                print("emulator:", name, flush=True)
            subprocess.run(cmd, check=True)
            os.replace(tmp, lib64 / name)  # atomic: a running process keeps the old inode
    _install_headers(prefix)
    return prefix


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prefix", type=Path, default=DEFAULT_PREFIX)
    ap.add_argument("--sanitize", action="store_true", help="AddressSanitizer + UBSan build")
    ap.add_argument("--force", action="store_true", help="rebuild even if up to date")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    try:
        build(args.prefix, sanitize=args.sanitize, force=args.force, quiet=args.quiet)
    except subprocess.CalledProcessError as e:
        print(f"emulator: build failed ({e.returncode})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
