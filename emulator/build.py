"""Builds the CPU emulator of CANN into a prefix laid out like a CANN install.

    <prefix>/lib64/libascendcl.so     runtime        (emulator/src/runtime/*.c)
    <prefix>/lib64/libacl_rt.so       the same runtime under CANN's newer name (a link)
    <prefix>/lib64/libnnopbase.so     acl_meta.h     (emulator/src/meta/*.c)
    <prefix>/lib64/libopapi.so        every operator (emulator/src/ops/*.c, ops_math/*.c)
    <prefix>/lib64/libopapi_nn.so     the nn operators (ops/), as newer releases split them
    <prefix>/lib64/libopapi_math.so   the math operators (ops_math/)
    <prefix>/include/                 bindings/include + emulator/include (aclemu/), and
                                      aclnnop/level2/: a copy of each aclnnop/ header
    <prefix>/share/info/<package>/version.info   each package's version (VERSION_INFO)

The sources are compiled against bindings/include, the same headers cffi reads, so the C
compiler proves the emulator implements exactly what acl-py declares. Pure Python on purpose:
`pip install .`, the Makefile and the sanitizer build all call this one script.

Usage: python emulator/build.py [--prefix DIR] [--sanitize] [--force] [--quiet]
Environment: CC (default cc), ACL_EMU_CFLAGS (extra compiler flags).

A full build takes about a minute on two cores (the operator file is most of it), so it reports
progress unless quiet: on a terminal one status line rewritten in place, elsewhere (pip, CI
logs) a line per finished step and a "still compiling" line every 15 s.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SRC = HERE / "src"
INCLUDES = [ROOT / "bindings" / "include", HERE / "include"]
DEFAULT_PREFIX = ROOT / "acl_py" / "_emulator"

# ACLEMU_IMPLEMENTATION: aclnn/acl_meta.h is C++ only, as CANN's; the emulator, in C, reads it
# as C (the same declarations cffi reads).
CFLAGS = ["-std=c11", "-D_GNU_SOURCE", "-DACLEMU_IMPLEMENTATION", "-fPIC", "-pthread", "-O3",
          "-g", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter"]
# Undefined behaviour traps (SIGILL) instead of calling the UBSan runtime: in a process that
# also loads ASan, UBSan's runtime shares ASan's report path and exit code through symbol
# interposition, so its reports reach stderr only (lost when a test captures it) and its exit
# status follows ASan's. A trap becomes an ASan "deadly signal" report, in ASan's log, with the
# file and line of the undefined operation (tools/sanitize.py).
SANITIZE_FLAGS = ["-O1", "-fsanitize=address,undefined", "-fno-omit-frame-pointer",
                  "-fno-sanitize-recover=undefined", "-fsanitize-undefined-trap-on-error"]

# (library file, source folders, libraries it links against). Newer CANN releases split the
# operators by domain (libopapi_nn.so, libopapi_math.so, ...); libopapi.so has them all.
# libnnopbase.so links libstdc++ (its runtime file, present without g++) for operator new[]:
# the arrays aclGetViewShape & co. hand out are released with delete[], as CANN's docs say
# (meta/accessors.c); CANN's libnnopbase.so, C++, links it too.
LIBRARIES = [
    ("libascendcl.so", ("runtime",), ["-lm"]),
    ("libnnopbase.so", ("meta",), ["-lascendcl", "-l:libstdc++.so.6"]),
    ("libopapi.so", ("ops", "ops_math"), ["-lnnopbase", "-lascendcl", "-lm"]),
    ("libopapi_nn.so", ("ops",), ["-lnnopbase", "-lascendcl", "-lm"]),
    ("libopapi_math.so", ("ops_math",), ["-lnnopbase", "-lascendcl", "-lm"]),
]

# The operators' shared helpers in ops/ that an ops_math/ operator uses (the dtype conversions,
# the BatchNorm channel tasks aclnnBatchNormStats launches): linked into libopapi_math.so too,
# hidden, so that library stands alone as CANN's does (libopapi.so has them once, from ops/).
MATH_HELPERS = ("ops/convert.c", "ops/bn_channels.c")


# Other names of a library, as links to it. CANN's runtime package ships the runtime as
# libacl_rt.so, libascendcl.so being optional (hicann/runtime
# scripts/package/module/ascend/RuntimeSo.xml), and the vendor's runtime examples link
# libacl_rt.so; acl-py and the other emulator libraries use libascendcl.so. One file under both
# names, SONAME libascendcl.so: a program linked with either loads one runtime.
ALIASES = [("libacl_rt.so", "libascendcl.so")]


# The packages whose versions the prefix records, as a CANN install does: each package writes
# share/info/<name>/version.info with a "Version=" line (hicann/runtime cmake/package.cmake),
# which aclsysGetVersionStr reads. The versions are the ones the emulator follows (the
# checkouts' version.cmake: runtime 9.1.0, opbase 9.0.0, ops-nn and ops_math 9.1.0).
VERSION_INFO = {"runtime": "9.1.0", "opbase": "9.0.0", "ops-nn": "9.1.0", "ops_math": "9.1.0"}


def _version_file(prefix: Path, package: str) -> Path:
    return prefix / "share" / "info" / package / "version.info"


def _install_version_info(prefix: Path) -> None:
    for package, version in VERSION_INFO.items():
        path = _version_file(prefix, package)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"Version={version}\n")


def _inputs() -> list[Path]:
    files = [Path(__file__)]
    for d in [SRC, *INCLUDES]:
        files += sorted(p for p in d.rglob("*") if p.suffix in (".c", ".h"))
    return files


def _stamp(prefix: Path) -> Path:
    """Where a finished build records what it was built from (:func:`_fingerprint`)."""
    return prefix / "lib64" / ".aclemu-build-inputs"


def _fingerprint(command: list[str]) -> str:
    """A hash of every input's path and contents and of the compile ``command`` (compiler,
    flags, include folders). Taken before the first compile: a source edited while the build
    runs (whose objects may hold either version) differs from it, so the next build runs
    again, which modification times would not tell (the outputs are newer than the edit).
    Hashing the ~2 MB of sources costs milliseconds, so a no-op build stays fast."""
    h = hashlib.sha256("\0".join(command).encode())
    for p in _inputs():
        h.update(b"\0" + str(p.relative_to(ROOT) if p.is_relative_to(ROOT) else p).encode())
        h.update(b"\0" + p.read_bytes())
    return h.hexdigest()


def _up_to_date(prefix: Path, fingerprint: str) -> bool:
    outs = [prefix / "lib64" / name for name, _, _ in LIBRARIES]
    if not all(p.exists() for p in outs):
        return False
    if not all((prefix / "lib64" / alias).exists() for alias, _ in ALIASES):
        return False
    if not all(_version_file(prefix, p).exists() for p in VERSION_INFO):
        return False
    try:
        return _stamp(prefix).read_text() == fingerprint
    except OSError:
        return False


# CANN installs every operator header twice: include/aclnnop/ and, deprecated, with a #warning
# saying so, include/aclnnop/level2/ (hicann/opbase cmake/package.cmake, hicann/ops-nn
# cmake/opbuild.cmake). The prefix does the same, each level2 header including its aclnnop/ twin.
LEVEL2_WARNING = ("This file is scheduled to be deprecated: include the header of the same name "
                  "under include/aclnnop instead")


def _level2_header(name: str) -> str:
    return ("/* Generated by acl-py emulator/build.py: the deprecated level2/ copy of "
            f"aclnnop/{name}, as CANN installs one. */\n"
            f'#warning "{LEVEL2_WARNING}"\n'
            f'#include "aclnnop/{name}"\n')


def _install_headers(prefix: Path) -> None:
    inc = prefix / "include"
    if inc.exists():
        shutil.rmtree(inc)
    for src in INCLUDES:
        shutil.copytree(src, inc, dirs_exist_ok=True)
    level2 = inc / "aclnnop" / "level2"
    level2.mkdir()
    for header in sorted((inc / "aclnnop").glob("*.h")):
        (level2 / header.name).write_text(_level2_header(header.name))


class BuildError(Exception):
    """The emulator cannot be built here; the message says how to proceed."""


def _cc_words() -> list[str]:
    """``$CC`` (default ``cc``) as an argument list."""
    return shlex.split(os.environ.get("CC", "cc")) or ["cc"]


def _compiler() -> list[str]:
    """``$CC`` (default ``cc``) as an argument list, checked to exist."""
    cc = _cc_words()
    if shutil.which(cc[0]) is None:
        where = "CC=" + os.environ["CC"] if os.environ.get("CC") else "cc"
        raise BuildError(
            f"emulator: no C compiler found ({where} is not on PATH). acl-py builds its CPU "
            f"emulator of CANN from C sources. Either install a C compiler (gcc: e.g. "
            f"`apt-get install gcc` or `dnf install gcc`, or point CC at one), or, on a "
            f"machine with CANN installed, skip the emulator: ACL_PY_NO_EMULATOR=1 pip "
            f"install acl-py (or `ACL_PY_NO_EMULATOR=1 pip install .` in the source tree).")
    return cc


class _Progress:
    """Reports a build's steps on stdout: on a terminal one status line rewritten twice a
    second (elapsed time, steps done, what is still compiling); otherwise a line per finished
    step and a heartbeat every ``heartbeat`` seconds, so a log (and pip's spinner, which
    turns on each line) shows the build is alive."""

    def __init__(self, total: int, quiet: bool, stream=None, heartbeat: float = 15.0):
        self.total = total
        self.quiet = quiet
        self.stream = stream if stream is not None else sys.stdout
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.heartbeat = heartbeat
        self.t0 = time.monotonic()
        self.done = 0
        self.running: dict[str, float] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.ticker: threading.Thread | None = None

    def __enter__(self):
        if not self.quiet:
            self.ticker = threading.Thread(target=self._tick, name="emulator-build-progress",
                                           daemon=True)
            self.ticker.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        if self.ticker is not None:
            self.ticker.join()
        if self.tty and not self.quiet:
            self._write("\r\033[K")
        return False

    def message(self, text: str) -> None:
        if not self.quiet:
            self._write(("\r\033[K" if self.tty else "") + text + "\n")

    def started(self, step: str) -> None:
        with self.lock:
            self.running[step] = time.monotonic()

    def finished(self, step: str) -> None:
        with self.lock:
            t = time.monotonic() - self.running.pop(step, time.monotonic())
            self.done += 1
            done = self.done
        if not self.tty:
            self.message(f"emulator: [{done}/{self.total}] {step} ({t:.1f} s)")

    def _status(self) -> str:
        with self.lock:
            running = sorted(self.running, key=self.running.get)
            done = self.done
        busy = f"; running {', '.join(running)}" if running else ""
        return (f"emulator: {done}/{self.total} steps done, "
                f"{time.monotonic() - self.t0:.0f} s{busy}")

    def _tick(self) -> None:
        interval = 0.5 if self.tty else self.heartbeat
        while not self.stop.wait(interval):
            if self.tty:
                self._write("\r\033[K" + self._status()[:max(20, _columns() - 1)])
            else:
                self.message(self._status())

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed pipe: progress is a courtesy
            pass


def _columns() -> int:
    return shutil.get_terminal_size((80, 24)).columns


def build(prefix: Path = DEFAULT_PREFIX, sanitize: bool = False, force: bool = False,
          quiet: bool = False, extra_cflags: tuple[str, ...] = ()) -> Path:
    prefix = Path(prefix).resolve()
    flags = CFLAGS + (SANITIZE_FLAGS if sanitize else [])
    flags += shlex.split(os.environ.get("ACL_EMU_CFLAGS", "")) + list(extra_cflags)
    incs = [f"-I{p}" for p in INCLUDES] + [f"-I{SRC}"]
    # what this build is made from, taken before its first compile (see _fingerprint)
    fingerprint = _fingerprint([*_cc_words(), *flags, *incs])
    if not force and _up_to_date(prefix, fingerprint):
        return prefix
    cc = _compiler()
    lib64 = prefix / "lib64"
    lib64.mkdir(parents=True, exist_ok=True)
    # a build stopped half-way (or failing) leaves no record: the next one runs again
    _stamp(prefix).unlink(missing_ok=True)
    folders = sorted({folder for _, fs, _ in LIBRARIES for folder in fs})
    sources = {f: sorted((SRC / f).glob("*.c")) for f in folders}
    for f in folders:
        if not sources[f]:
            raise SystemExit(f"emulator: no sources in {SRC / f}")
    jobs = [src for f in folders for src in sources[f]]
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="aclemu-obj-") as tmpdir, \
            _Progress(len(jobs) + len(LIBRARIES), quiet) as progress:
        # Each source is compiled once, all of them in parallel (the operator file alone is
        # most of the time; libopapi.so and libopapi_nn.so link the same objects).
        def compile_one(src: Path) -> str:
            obj = Path(tmpdir) / f"{src.parent.name}_{src.stem}.o"
            step = f"{src.parent.name}/{src.name}"
            progress.started(step)
            subprocess.run([*cc, *flags, *incs, "-c", "-o", str(obj), str(src)], check=True)
            progress.finished(step)
            return str(obj)

        progress.message(f"emulator: compiling {len(jobs)} files with {' '.join(cc)} into "
                         f"{prefix} (a minute or so on 2 cores)")
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            objs = dict(zip(jobs, pool.map(compile_one, jobs)))
        for name, lib_folders, libs in LIBRARIES:
            tmp = lib64 / (name + ".tmp")
            # The SONAME lets the dynamic linker match a library's dependencies (libnnopbase.so
            # needs libascendcl.so) to the copies acl-py already opened by absolute path;
            # without it they are searched for again, LD_LIBRARY_PATH first, where "." or an
            # empty element would load a libascendcl.so planted in the current directory.
            lib_objs = [objs[s] for f in lib_folders for s in sources[f]]
            if name == "libopapi_math.so":
                lib_objs += [objs[SRC / h] for h in MATH_HELPERS]
            cmd = [*cc, *flags, "-shared", "-o", str(tmp), *lib_objs,
                   f"-L{lib64}", f"-Wl,-soname,{name}", "-Wl,-rpath,$ORIGIN",
                   "-Wl,--no-undefined", *libs]
            progress.started(f"link {name}")
            subprocess.run(cmd, check=True)
            os.replace(tmp, lib64 / name)  # atomic: a running process keeps the old inode
            progress.finished(f"link {name}")
        for alias, target in ALIASES:
            tmp = lib64 / (alias + ".tmp")
            tmp.unlink(missing_ok=True)
            tmp.symlink_to(target)
            os.replace(tmp, lib64 / alias)
        progress.message(f"emulator: built in {time.monotonic() - t0:.0f} s")
    _install_headers(prefix)
    _install_version_info(prefix)
    _stamp(prefix).write_text(fingerprint)
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
    except BuildError as e:
        print(e, file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as e:
        print(f"emulator: build failed: the compiler exited with status {e.returncode} (its "
              f"messages are above)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
