"""The documentation stands on its own: it names no file outside the repository (a reader has
only the repository; vendor files are named as "hicann/<repo> <path>"), every repository
path it names in backquotes exists, and docs/emulator.md says what the emulator does not
model."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
# Top-level folders of this repository: a backquoted path starting with one must exist.
REPO_DIRS = ("acl_py/", "bindings/", "emulator/", "docs/", "samples/", "tests/", "tools/",
             "benchmarks/")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_doc_points_only_inside_the_repository(doc):
    text = doc.read_text()
    outside = re.findall(r"(/work/\S*|\bshared/\S*|CANN_ABI\.md)", text)
    assert outside == [], f"{doc.name} points outside the repository: {outside}"
    missing = []
    for m in re.finditer(r"`([\w./-]+)`", text):
        path = m.group(1)
        if not path.startswith(REPO_DIRS):
            continue
        if "hicann/" in text[max(0, m.start() - 160):m.start()]:
            continue    # a vendor file, named after its repository ("hicann/ops-nn ... `docs/x.md`")
        if not (ROOT / path).exists():
            missing.append(path)
    assert missing == [], f"{doc.name} names paths that do not exist: {missing}"


def test_emulator_doc_says_what_it_does_not_model():
    text = (ROOT / "docs" / "emulator.md").read_text()
    section = text.split("## What the emulator does not model", 1)
    assert len(section) == 2, "docs/emulator.md lacks 'What the emulator does not model'"
    body = section[1].split("\n## ", 1)[0]
    for topic in ("Numerics", "Timing", "Limits"):
        assert f"**{topic}" in body, topic
    assert "no NPU was tested" in body


def test_readme_lists_every_declared_operator():
    """README's "What acl-py is" names each operator acl-py declares (the list drifted once:
    three operators had landed without their entry)."""
    from acl_py.ops import DECLARED

    text = (ROOT / "README.md").read_text()
    bullet = text.split("* **Operators** (`acl_py/ops/`)", 1)[1].split("\n* **", 1)[0]
    listed = set(re.findall(r"`aclnn(\w+)`", bullet))
    assert listed == set(DECLARED), (sorted(set(DECLARED) - listed), sorted(listed - set(DECLARED)))
