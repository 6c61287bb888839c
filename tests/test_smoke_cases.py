"""The smoke test's two kinds of case share one protocol (:class:`acl_py.smoke.SmokeCase`):
a case of a hand-written matrix (:class:`~acl_py.smoke.Case`, LayerNormBackward's, built as
before) and a declared operator's (:class:`~acl_py.smoke.DeclaredCase`) give the report the
same keys in the same order and the table the same columns, and the runner, the selections,
the tables and the JSON report take any kind through the protocol alone: a kind defined here
runs through ``acl-py smoke`` with no change to acl_py.smoke."""
from __future__ import annotations

import dataclasses
import io
import json

import pytest

from acl_py import smoke
from acl_py.ops import RMS_NORM


def test_case_keeps_its_constructor_and_fields():
    hook = lambda expected: expected   # noqa: E731
    case = smoke.Case("every-field", (2, 3, 8), 2, "float16", stats_dtype="float32",
                      weight_dtype="float32", weight=True, out_dtypes=("float32", None, None),
                      mask=(True, False, True), layout="strided", data="random", seed=7,
                      operator="LayerNormBackward", unsupported=None, reference_hook=hook)
    assert case.normalized_ndim == 2 and case.dtype == "float16"
    assert case.normalized_shape == (3, 8)
    assert isinstance(case, smoke.SmokeCase)
    assert case == dataclasses.replace(case, reference_hook=None)   # the hook is not compared
    with pytest.raises(dataclasses.FrozenInstanceError):
        case.name = "other"   # type: ignore[misc]
    assert case.dtype_label() == "fp16 s:fp32 w:fp32 o:fp32,-,-"
    assert (case.mask_label(), case.norm_label()) == ("101", "2")
    assert smoke.case_dtypes(case) == {"float16", "float32"}
    assert case.runs_on("Ascend910A")


def test_both_kinds_report_the_same_keys_in_the_same_order():
    case = smoke.Case("tiny", (2, 8))
    declared = smoke.declared_case(RMS_NORM, RMS_NORM.smoke_cases[0])
    assert isinstance(declared, smoke.DeclaredCase) and isinstance(declared, smoke.SmokeCase)
    assert list(case.describe()) == list(declared.describe())
    assert declared.describe()["output_mask"] is None and case.describe()["input_dtypes"] is None
    assert (declared.mask_label(), declared.norm_label()) == ("-", "-")
    assert not hasattr(case, "declared")      # the kinds no longer share each other's fields


@dataclasses.dataclass(frozen=True)
class ConstantCase(smoke.SmokeCase):
    """A kind of case the smoke module knows nothing of: it passes without a device call."""
    name: str
    shape: tuple[int, ...] = (3,)
    dtype: str = "float16"
    layout: str = "contiguous"
    operator: str = "Constant"
    unsupported: str | None = None

    def dtype_label(self) -> str:
        return "const"

    def tensor_dtypes(self) -> set[str]:
        return {self.dtype}

    def run(self, stream=None) -> smoke.CaseResult:
        return smoke.CaseResult(self, True, 0.0, outputs=[
            smoke.OutputCheck("value", self.dtype, 0.0, 0.0, True)])


def test_a_new_kind_of_case_runs_through_the_smoke_unchanged(tmp_path):
    cases = [ConstantCase("const-a"), ConstantCase("const-b"), smoke.Case("tiny", (2, 8))]
    out, err = io.StringIO(), io.StringIO()
    path = tmp_path / "report.json"
    status = smoke.main(["--json", str(path), "--dtypes", "fp16,fp32"], cases=cases, out=out,
                        err=err)
    assert status == 0, out.getvalue()
    row = next(line for line in out.getvalue().splitlines() if line.startswith("const-a "))
    assert row.split()[:4] == ["const-a", "const", "3", "-"]
    data = json.loads(path.read_text())
    reported = data["devices"][0]["cases"]
    assert [c["name"] for c in reported] == ["const-a", "const-b", "tiny"]
    assert reported[0]["operator"] == "Constant" and reported[0]["input_dtypes"] is None
    assert list(reported[0])[:14] == list(cases[2].describe())
    # --dtypes selects it by its own dtypes: fp32 alone leaves it out
    out = io.StringIO()
    assert smoke.main(["--dtypes", "fp32"], cases=cases, out=out, err=io.StringIO()) == 0
    assert "const-a" not in out.getvalue() and "tiny" in out.getvalue()
