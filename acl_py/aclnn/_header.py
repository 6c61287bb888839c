"""Reads the two-phase prototypes out of an operator header (``aclnnop/aclnn_*.h``).

Only what a CANN operator header declares is understood: ``aclnnStatus`` functions whose
parameters are plain C declarations (no function pointers). Comments, preprocessor lines,
``extern "C"`` and export macros (``ACLNN_API``, ``__attribute__((...))``) are skipped. The
result is text, not types: the C types are resolved against acl-py's declarations when an
operator is first used (``_catalog``)."""
from __future__ import annotations

import re
from dataclasses import dataclass

_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_DIRECTIVE = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.M)
# NAME ( params ) ;   -- params without parentheses or braces: plain declarations only
_FUNCTION = re.compile(r"\b(aclnn\w+)\s*\(([^;{}()]*)\)\s*;")
_PHASE_ONE = re.compile(rb"\baclnn(\w+?)GetWorkspaceSize\s*\(")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_QUALIFIERS = {"const", "volatile", "struct", "enum"}


@dataclass(frozen=True)
class CParam:
    """One parameter: its C type as written (``const aclTensor *``), its name, and the type
    without qualifiers or spaces (``aclTensor*``), which conversion dispatches on."""
    ctype: str
    name: str
    base: str

    @property
    def is_const(self) -> bool:
        return self.ctype.startswith("const ")

    def __str__(self) -> str:
        return f"{self.ctype}{'' if self.ctype.endswith('*') else ' '}{self.name}"


@dataclass(frozen=True)
class Prototype:
    name: str
    params: tuple[CParam, ...]

    def __str__(self) -> str:
        return f"aclnnStatus {self.name}({', '.join(map(str, self.params))})"


def _normalize_type(words: list[str], stars: int) -> str:
    core = [w for w in words if w not in _QUALIFIERS]
    return "".join(core) + "*" * stars


def parse_param(text: str, function: str, index: int) -> CParam:
    """``const aclTensor *self`` -> CParam. Raises ValueError for what is not a plain
    declaration."""
    t = " ".join(text.replace("*", " * ").split())
    if t in ("void", ""):
        raise ValueError("no parameter")
    array = t.endswith("]")
    if array:  # "int64_t dims[]" is a pointer
        t = t[:t.rindex("[")].strip()
    tokens = t.split(" ")
    name = tokens[-1]
    if not _IDENT.fullmatch(name) or len(tokens) < 2:
        raise ValueError(f"{function}: parameter {index} ({text.strip()!r}) has no name")
    type_tokens = tokens[:-1]
    stars = type_tokens.count("*") + (1 if array else 0)
    words = [w for w in type_tokens if w != "*"]
    if not words or not all(_IDENT.fullmatch(w) for w in words):
        raise ValueError(f"{function}: cannot read parameter {text.strip()!r}")
    const = "const" in words[:1]
    core = " ".join(w for w in words if w not in _QUALIFIERS)
    ctype = ("const " if const else "") + core + (" " + "*" * stars if stars else "")
    return CParam(ctype, name, _normalize_type(words, stars))


def _clean(text: str) -> str:
    text = _COMMENT.sub(" ", text)
    return _DIRECTIVE.sub(" ", text)


def prototypes(text: str) -> dict[str, Prototype]:
    """Every ``aclnnStatus aclnn...(...)`` declaration of a header, by name."""
    text = _clean(text)
    out = {}
    for m in _FUNCTION.finditer(text):
        name, body = m.group(1), m.group(2)
        before = text[max(0, m.start() - 200):m.start()].split()
        if not before or before[-1] != "aclnnStatus":
            continue  # not an aclnnStatus function (a macro use, another return type)
        params = tuple(parse_param(p, name, i) for i, p in enumerate(body.split(","))
                       if p.strip() not in ("", "void"))
        out[name] = Prototype(name, params)
    return out


def operator_names(text: str | bytes) -> list[str]:
    """Names (``Add``) of the operators whose phase one a header mentions, without parsing
    anything: the cheap scan the catalog's index uses (a name only mentioned in a comment is
    caught later, when its prototype is looked up)."""
    if isinstance(text, str):
        text = text.encode()
    return list(dict.fromkeys(n.decode() for n in _PHASE_ONE.findall(text)))
