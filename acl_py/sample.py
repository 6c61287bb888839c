"""``acl-py sample``: runs the Python ports of the vendor's C++ examples.

The ports are the files of ``samples/`` (of the source tree acl_py was imported from, else
the copy an installed wheel carries in ``acl_py/_samples``) that declare, at module level,
which C++ example they port::

    VENDOR_EXAMPLE = {"operator": "aclnnRmsNorm",
                      "example": "hicann/ops-nn norm/rms_norm/examples/test_aclnn_rms_norm.cpp"}

(``"via"``, optional: how the port differs from another port of the same example; ``"soc"``,
optional: the part the example is written for where the emulator's default part has no kernel
for its operator, e.g. ``"Ascend310P3"`` for an ``examples/arch20`` example: the port's
process then gets ``ACL_EMU_SOC`` set to it, which only the emulator reads.) A port's
name is its file's stem (``rms_norm``). The declaration is read from the file's syntax tree,
not by importing it, so listing runs no port. A port added to ``samples/`` is listed and run
with no change here.

* ``acl-py sample``: the LayerNormBackward port (:data:`DEFAULT`), as ``make sample`` runs it.
* ``acl-py sample NAME``: that port; ``--raw`` is ``layer_norm_backward_raw``.
* ``acl-py sample --list``: every port, the operator and the C++ example it ports.
* ``acl-py sample --all``: every port in turn, then one line per port (pass, or the failing
  call and its code); exit status 1 when any failed. A port still running after
  ``--timeout SECONDS`` (default :data:`DEFAULT_TIMEOUT`) is killed and fails ("timed out
  after N s"), and the run goes on with the next: one hung port does not hang the run.
* ``--timeout SECONDS`` with a single port: the same limit for it (none by default: its
  output streams to the terminal as it runs).
* ``--show``: the chosen ports' paths instead of running them.

Each port runs in a fresh interpreter (it owns the runtime from aclInit to aclFinalize). The
failures a user can meet (no CANN where ``ACL_PY_BACKEND=cann`` asks for it, a device refusing
a call) end the port with one line naming the call and its code, and exit status 1.
Exit status: a single port's own; 0 or 1 for ``--all``; 2 for a usage error (an unknown
name, no ports shipped).
"""
from __future__ import annotations

import argparse
import ast
import math
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

DEFAULT = "layer_norm_backward"
DECLARATION = "VENDOR_EXAMPLE"
# Seconds a port of --all may run (each takes seconds on the emulator; a device's first
# kernel launches add their compilation and loading).
DEFAULT_TIMEOUT = 300.0


@dataclass(frozen=True)
class Port:
    """A port of one of the vendor's C++ examples: its name (the file's stem), file, the
    operator the example calls, the example (``hicann/<repo> <path>``) and, where two ports
    share an example, how this one differs (``via``)."""
    name: str
    path: Path
    operator: str
    example: str
    via: str | None = None
    soc: str | None = None

    def describe(self) -> str:
        """``aclnnRmsNorm: hicann/ops-nn norm/rms_norm/examples/test_aclnn_rms_norm.cpp``."""
        via = f"; {self.via}" if self.via else ""
        return f"{self.operator}: {self.example}{via}"

    def environment(self) -> dict[str, str] | None:
        """The port's process environment: this one's, with ``ACL_EMU_SOC`` set to the
        declared part (None: no part declared, this environment as it is)."""
        if self.soc is None:
            return None
        return {**os.environ, "ACL_EMU_SOC": self.soc}


def samples_dir() -> Path:
    """``samples/`` of the source tree acl_py was imported from, else the copy an installed
    wheel carries in ``acl_py/_samples``."""
    here = Path(__file__).resolve().parent
    source = here.parent / "samples"
    return source if (source / f"{DEFAULT}.py").is_file() else here / "_samples"


def read_port(path: Path) -> Port | None:
    """The port ``path`` declares (None: the file declares no :data:`DECLARATION`, it is no
    port). Raises ValueError naming the file when the declaration is malformed."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in tree.body:
        value: ast.expr | None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign):
            targets, value = [node.target], node.value
        else:
            continue
        if not any(isinstance(t, ast.Name) and t.id == DECLARATION for t in targets):
            continue
        try:
            found = ast.literal_eval(value) if value is not None else None
        except ValueError:
            found = None
        if (not isinstance(found, dict)
                or not set(found) <= {"operator", "example", "via", "soc"}
                or not all(isinstance(found.get(k), str) for k in ("operator", "example"))
                or not all(isinstance(found.get(k, ""), str) for k in ("via", "soc"))):
            raise ValueError(f"{path}: {DECLARATION} must be a literal dict of strings with "
                             f"'operator' and 'example' (and optionally 'via', 'soc')")
        return Port(path.stem, path, found["operator"], found["example"], found.get("via"),
                    found.get("soc"))
    return None


def ports(directory: Path | None = None) -> dict[str, Port]:
    """Every port of ``directory`` (default :func:`samples_dir`), by name, in name order."""
    directory = samples_dir() if directory is None else directory
    found = (read_port(p) for p in sorted(directory.glob("*.py")))
    return {p.name: p for p in found if p is not None}


def add_sample_arguments(p: argparse.ArgumentParser) -> None:
    which = p.add_mutually_exclusive_group()
    which.add_argument("name", nargs="?", metavar="NAME",
                       help=f"the port to run (default {DEFAULT}); --list shows them")
    which.add_argument("--list", action="store_true",
                       help="list the ports: name, operator, the vendor's C++ example")
    which.add_argument("--all", action="store_true",
                       help="run every port, then summarize (exit status 1 if any failed)")
    which.add_argument("--raw", action="store_true",
                       help=f"run the raw cffi port ({DEFAULT}_raw) instead")
    p.add_argument("--show", action="store_true",
                   help="print the chosen port's path (every port's with --all) and exit")
    p.add_argument("--timeout", type=_seconds, default=None, metavar="SECONDS",
                   help=f"kill a port still running after SECONDS and count it failed "
                        f"(--all: default {DEFAULT_TIMEOUT:g}; one port: no limit)")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value > 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def run_sample(args: argparse.Namespace, directory: Path | None = None) -> int:
    """The ``sample`` command for parsed ``args``; returns the exit status (module doc).
    ``directory``: where the ports are (default :func:`samples_dir`)."""
    directory = samples_dir() if directory is None else directory
    try:
        found = ports(directory) if directory.is_dir() else {}
    except (ValueError, SyntaxError) as e:
        return _usage(f"a sample does not parse: {e}")
    if not found:
        return _usage(f"no ports in {directory}; the samples ship with the source tree "
                      f"(git clone, then `make sample`)")
    if args.list:
        width = max(map(len, found))
        op_width = max(len(p.operator) for p in found.values())
        for port in found.values():
            notes = ([port.via] if port.via else []) + (
                [f"the emulator runs it as {port.soc}"] if port.soc else []) + (
                ["the default"] if port.name == DEFAULT else [])
            note = f" ({'; '.join(notes)})" if notes else ""
            print(f"{port.name:<{width}}  {port.operator:<{op_width}}  {port.example}{note}")
        return 0
    if args.all:
        chosen = list(found.values())
    else:
        name = f"{DEFAULT}_raw" if args.raw else (args.name or DEFAULT)
        if name not in found:
            return _usage(f"no port named {name!r} in {directory}; the ports: "
                          f"{', '.join(found)} (acl-py sample --list)")
        chosen = [found[name]]
    if args.show:
        for port in chosen:
            print(port.path)
        return 0
    if not args.all:
        sys.stdout.flush()
        try:
            return subprocess.call(_command(chosen[0]), timeout=args.timeout,
                                   env=chosen[0].environment())
        except subprocess.TimeoutExpired:   # the port is killed and waited for
            print(f"acl-py sample: {chosen[0].name} {_timed_out(args.timeout)}",
                  file=sys.stderr)
            return 1
    return _run_all(chosen, DEFAULT_TIMEOUT if args.timeout is None else args.timeout)


def _usage(msg: str) -> int:
    print(f"acl-py sample: {msg}", file=sys.stderr)
    return 2


def _command(port: Port) -> list[str]:
    return [sys.executable, "-c", _SAMPLE_RUNNER, str(port.path)]


def _timed_out(timeout: float) -> str:
    return f"timed out after {timeout:g} s"


def _text(output: str | bytes | None) -> str:
    # TimeoutExpired carries what the port wrote before it was killed, as bytes
    if isinstance(output, bytes):
        return output.decode(errors="replace")
    return output or ""


def _run_all(chosen: list[Port], timeout: float) -> int:
    """Runs each port, its output passed on as it ends (stdout to stdout, stderr to stderr)
    under a heading, then one line per port: ``pass``, or ``FAIL`` and why (:func:`why`; a
    port killed after ``timeout`` seconds: "timed out after N s", with what it wrote)."""
    failures: dict[str, str] = {}
    for port in chosen:
        print(f"== {port.name} ({port.describe()})", flush=True)
        try:
            proc = subprocess.run(_command(port), capture_output=True, text=True,
                                  timeout=timeout, env=port.environment())
            returncode, out, err = proc.returncode, proc.stdout, proc.stderr
        except subprocess.TimeoutExpired as e:   # killed and waited for by subprocess.run
            returncode, out, err = None, _text(e.stdout), _text(e.stderr)
            failures[port.name] = _timed_out(timeout)
        sys.stdout.write(out)
        sys.stdout.flush()
        sys.stderr.write(err)
        if returncode is None:
            print(f"acl-py sample: {port.name} {failures[port.name]} (killed)",
                  file=sys.stderr)
        sys.stderr.flush()
        if returncode:
            failures[port.name] = why(returncode, err)
    width = max(len(p.name) for p in chosen)
    print(f"\n{len(chosen)} ports: {len(chosen) - len(failures)} passed, "
          f"{len(failures)} failed")
    for port in chosen:
        status = f"FAIL  {failures[port.name]}" if port.name in failures else "pass"
        print(f"  {port.name:<{width}}  {status}")
    return 1 if failures else 0


_FAILED_CALL = re.compile(r"\b\w+ failed: .*")


def why(returncode: int, stderr: str) -> str:
    """A failed port's reason in one line: its first ``<call> failed: <code and message>``
    line (the ports and the runner name the call and its code so), else its last line on
    stderr (a traceback's exception), else its exit status."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in lines:
        m = _FAILED_CALL.search(line)
        if m:
            return m.group(0)
    if lines:
        return lines[-1]
    if returncode < 0:
        return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


# Runs a sample file as __main__ in the fresh interpreter, its directory first on sys.path as
# `python <file>` has it (the ports import samples/example_helpers.py); the failures a user
# can meet (no CANN where ACL_PY_BACKEND=cann asks for it, a device refusing a call) end in one
# message and exit status 1, not a traceback. Anything else is a bug and keeps its traceback.
_SAMPLE_RUNNER = """
import os, runpy, sys
from acl_py._loader import LibraryNotFoundError
from acl_py.errors import AclError
path = sys.argv[1]
sys.argv = [path]
sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
try:
    runpy.run_path(path, run_name="__main__")
except (LibraryNotFoundError, AclError) as e:
    sys.stdout.flush()
    print(f"acl-py sample: {e}", file=sys.stderr)
    sys.exit(1)
"""

# The names acl_py.cli's command table refers to.
add_arguments = add_sample_arguments
run = run_sample

__all__ = ["DEFAULT", "DECLARATION", "DEFAULT_TIMEOUT", "Port", "samples_dir", "read_port", "ports",
           "add_sample_arguments", "run_sample", "why"]
