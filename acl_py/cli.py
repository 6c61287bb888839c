"""The ``acl-py`` command line (also ``python -m acl_py``).

Subcommands are registered from :data:`COMMANDS`: each names a function that adds its
arguments to its subparser and a function that runs it and returns the exit status, as
``"module:function"`` strings. Only the chosen command's module is imported, and a command
living in another module (``sample`` in :mod:`acl_py.sample`, ``smoke`` in :mod:`acl_py.smoke`)
needs no code here, only its table row.
A command whose module is not part of this installation is still listed, and running it says
so (exit status 2) instead of pretending to work.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import sys
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    add_arguments: str  # "module:function(parser) -> None"
    run: str            # "module:function(args) -> int (exit status)"


COMMANDS: tuple[Command, ...] = (
    Command("info", "show the backend, its libraries, devices and memory",
            "acl_py.cli:add_info_arguments", "acl_py.cli:run_info"),
    Command("emulator-prefix", "print the emulator's install prefix (include/, lib64/)",
            "acl_py.cli:add_prefix_arguments", "acl_py.cli:run_prefix"),
    Command("sample", "run the ports of the vendor's C++ examples (default: LayerNormBackward's)",
            "acl_py.sample:add_sample_arguments", "acl_py.sample:run_sample"),
    Command("smoke", "hardware smoke test: every operator's cases checked against NumPy",
            "acl_py.smoke:add_arguments", "acl_py.smoke:run"),
    Command("ops", "list the aclnn operators the active backend offers (acl_py.aclnn)",
            "acl_py.aclnn:add_ops_arguments", "acl_py.aclnn:run_ops"),
)


def _resolve(ref: str) -> Callable[..., Any]:
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


def _missing(ref: str) -> str | None:
    """Why ``ref`` cannot be used (None when it can). Imports the module if it exists: an
    error inside it propagates, only absence is reported."""
    module, _, attr = ref.partition(":")
    try:
        if importlib.util.find_spec(module) is None:
            return f"{module} is missing"
    except ModuleNotFoundError:
        return f"{module} is missing"
    if not hasattr(importlib.import_module(module), attr):
        return f"{module} has no {attr}()"
    return None


def _error(msg: str) -> None:
    print(f"acl-py: {msg}", file=sys.stderr)


# ---- info --------------------------------------------------------------------------------

def add_info_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object (for scripts) instead of text")


def run_info(args: argparse.Namespace) -> int:
    from . import info
    from ._loader import LibraryNotFoundError
    try:
        data = info.collect()
    except LibraryNotFoundError as e:
        if args.json:
            print(json.dumps({"backend": None, "error": str(e)}, indent=2))
        _error(str(e))
        return 1
    print(json.dumps(data, indent=2) if args.json else info.format_text(data))
    return 0 if info.ok(data) else 1


# ---- emulator-prefix -----------------------------------------------------------------------

def add_prefix_arguments(parser: argparse.ArgumentParser) -> None:
    pass


def run_prefix(args: argparse.Namespace) -> int:
    from . import _loader
    try:
        prefix = _loader.emulator_prefix()
    except _loader.LibraryNotFoundError as e:
        _error(str(e))
        return 1
    missing = [str(p) for p in (prefix / "include" / "acl" / "acl.h",) if not p.is_file()]
    if _loader.find_in_root(prefix, []) is None:
        missing.insert(0, str(prefix / "lib64"))
    if missing:
        _error(f"the emulator is not built under {prefix} (missing: {', '.join(missing)}): "
               f"run `make build` (or `python emulator/build.py`) in the source tree, or "
               f"reinstall acl-py with a C compiler present")
        return 1
    print(prefix.resolve())
    return 0


# ---- entry point ---------------------------------------------------------------------------

def _unavailable(command: Command, why: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        _error(f"`{command.name}` is not available in this installation ({why})")
        return 2
    return run


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; only ``command``'s own arguments are resolved (imported)."""
    parser = argparse.ArgumentParser(
        prog="acl-py",
        description="acl-py: Python binding over CANN's aclnn operators, with a CPU emulator.")
    parser.add_argument("--version", action="version", version=version_text(),
                        help="print acl-py's version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for c in COMMANDS:
        p = sub.add_parser(c.name, help=c.help, description=c.help)
        if c.name != command:
            continue
        why = _missing(c.add_arguments) or _missing(c.run)
        if why:
            p.set_defaults(_run=_unavailable(c, why), _unavailable=True)
        else:
            _resolve(c.add_arguments)(p)
            p.set_defaults(_run=c.run)
    return parser


def version_text() -> str:
    """``acl-py 0.1.0 (Python 3.11.2, /path/to/acl_py)``: which copy answers matters when
    an editable checkout and an installed wheel coexist."""
    import platform
    from pathlib import Path
    from . import __version__
    return (f"acl-py {__version__} (Python {platform.python_version()}, "
            f"{Path(__file__).resolve().parent})")


def _command_in(argv: list[str]) -> str | None:
    names = {c.name for c in COMMANDS}
    return next((a for a in argv if a in names), None)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_command_in(argv))
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "_unavailable", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    run = args._run
    if isinstance(run, str):
        run = _resolve(run)
    from ._loader import LibraryNotFoundError
    from .errors import AclError
    try:
        return int(run(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `acl-py info | head`
        return 0
    except (LibraryNotFoundError, AclError) as e:
        # Expected failures (no CANN where it was asked for, a device refusing a call): the
        # message says what to do; a traceback would only hide it. Bugs still show theirs.
        _error(str(e))
        return 1
