"""acl_py's modules import each other without a cycle, and none reaches into another's
private names. Read from the sources (no import): the imports a module runs when it is
imported (at its top level, in an ``if``/``try`` there, not under ``TYPE_CHECKING``), and
every ``module._name`` or ``from module import _name`` of another acl_py module (a private
module itself, e.g. ``from . import _ordering``, is a module, not a name in one)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "acl_py"


def _modules():
    """{dotted name: (path, is a package)} of every acl_py source module."""
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        if "_emulator" in rel.parts:
            continue
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        found[".".join(parts)] = (path, rel.name == "__init__")
    return found


MODULES = _modules()


def _source_of(module, node, is_package):
    """The module an ImportFrom names, resolved against ``module``."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base[:len(base) - node.level + (1 if is_package else 0)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(module):
    """(the acl_py modules ``module`` imports when imported, the private names it takes from
    other acl_py modules as (line, text))."""
    path, is_package = MODULES[module]
    tree = ast.parse(path.read_text(), str(path))
    runtime, aliases, private = set(), {}, []

    def visit(body, at_import):
        for node in body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse, at_import)
                continue
            if isinstance(node, ast.ImportFrom):
                source = _source_of(module, node, is_package)
                for a in node.names:
                    full = f"{source}.{a.name}"
                    target = full if full in MODULES else source
                    if full in MODULES:
                        aliases[a.asname or a.name] = full
                    elif (source in MODULES and a.name.startswith("_")
                          and not a.name.startswith("__")):
                        private.append((node.lineno, f"from {source} import {a.name}"))
                    if at_import and target in MODULES and target != module:
                        runtime.add(target)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in MODULES:
                        aliases[a.asname or a.name] = a.name
                        if at_import:
                            runtime.add(a.name)
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                for field in ("body", "orelse", "finalbody"):
                    visit(getattr(node, field, []), at_import)
                for handler in getattr(node, "handlers", []):
                    visit(handler.body, at_import)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                # a function's imports run when it is called; a class body's at import
                visit(node.body, at_import and isinstance(node, ast.ClassDef))

    visit(tree.body, True)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in aliases and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and f"{aliases[node.value.id]}.{node.attr}" not in MODULES):
            private.append((node.lineno, f"{node.value.id}.{node.attr}"))
    return runtime, private


GRAPH = {m: _imports(m) for m in MODULES}


def test_the_walk_reads_the_package():
    assert len(MODULES) > 40 and "acl_py.memory" in MODULES and "acl_py.ops._declare" in MODULES
    assert "acl_py.builtin_tasks" in GRAPH["acl_py.memory"][0]
    assert "acl_py.memory" not in GRAPH["acl_py.builtin_tasks"][0]


def test_no_import_cycle():
    cycles, state = [], {}

    def walk(m, stack):
        state[m] = "open"
        stack.append(m)
        for n in sorted(GRAPH[m][0]):
            if state.get(n) == "open":
                cycles.append(stack[stack.index(n):] + [n])
            elif n not in state:
                walk(n, stack)
        stack.pop()
        state[m] = "done"

    for m in sorted(GRAPH):
        if m not in state:
            walk(m, [])
    assert cycles == [], "\n".join(" -> ".join(c) for c in cycles)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_private_name_of_another_module(module):
    _, private = GRAPH[module]
    assert private == [], f"{MODULES[module][0]}: " + ", ".join(
        f"line {line}: {text}" for line, text in private)
