"""Tests run on other parts than this process's.

The emulated part (``ACL_EMU_SOC``) is read once per process, as the vendor's runtime caches
it, so a test file's tests about another part run in a child pytest process with
``ACL_EMU_SOC`` set. A file declares which of its tests run on which parts in one line::

    test_on_other_parts = run_on_parts(other_parts(), "part_dtype_table or float32_chain")

(``select``: a ``pytest -k`` expression over the file's tests, or a function of the part
giving one). That makes ``test_on_other_parts[<part>]``, one test per part. The session runs
**one child per part** for every file's selection together (``-k`` with each selection
joined to its file's name), not one per file and part: a child's start-up (the interpreter,
pytest, NumPy, the emulator) costs about 3 s of CPU, and the suite has dozens of such
selections. The children start in the background once collection is done (as many at once
as there are spare cores; more while the session waits for one), and each
``test_on_other_parts[<part>]`` waits for its part's child and judges its own file's tests
from the child's report (:data:`REPORT_ENV`: the tests the child selected, then each test's
outcome and failure text). It fails, naming the part and each failing test with its failure
and captured output, when one of them failed, when a selected test did not report (the
child crashed or was stopped), when fewer than ``min_passed`` passed, or (``skips=False``)
when one was skipped; the command line repeating the file's run is in the message. The
terminal summary shows each part's counts.

A test file run as a whole on any part (``ACL_EMU_SOC=<part> pytest tests/test_<op>.py``)
passes: what the part lacks is asked, not assumed: :func:`needs_kernel` (the operator),
:func:`skip_without_bf16` (the dtype), the declaration's ``unwritten_outputs`` (an output the
part does not write). A test or case that could never run in this process (another part's
kernel or template, an operator without a kernel here, BF16 on a part without it) is not
generated at all (:func:`only_where`, :func:`on_this_part`, :func:`cases_where`,
:func:`bf16_where_it_runs`): the parts that have it run it, in their own run or child.
``tools/run_per_part.py`` runs every file whole on every part.
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from functools import cache
from dataclasses import dataclass, field

import pytest

from acl_py.soc import short_soc_version, soc_name

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
# Set in a part child: the file it appends its report to (one JSON object a line).
REPORT_ENV = "ACL_PY_TEST_PART_REPORT"
MARKER = "run_on_parts"
PLUGIN_NAME = "acl_py_part_runs"
TIMEOUT = 1800       # seconds a child may run (its tests' own timeouts come first)

# The parts the operator tests also run on: one of each kind the emulator models (the
# Atlas training, inference, A2 and A3 series, Ascend 950).
PARTS = ("Ascend910A", "Ascend310P3", "Ascend910B2", "Ascend910_9391", "Ascend950PR_9599")


@cache
def _this_part():
    return soc_name()


def other_parts(parts=PARTS):
    """``parts`` without the one this process emulates (its tests run here), sorted."""
    return sorted(set(parts) - {_this_part()})


# The test checking that phase one refuses an operator where its declaration has no kernel
# (and runs it where it has), per operator: what a needs_kernel skip points to.
REFUSAL_TEST = "tests/test_declared_parts.py::test_phase_one_agrees_with_the_declared_parts"


def runs_here(op):
    """Whether operator ``op`` (a ``Declared``) has a kernel on this process's part: a case of
    it generated only where this holds is, on the other parts, no test (as :func:`only_where`),
    and the parts that have it run it (their own run, or their child: :func:`run_on_parts`)."""
    return op.runs_on(_this_part())


def needs_kernel(op):
    """A mark skipping a test (or, as ``pytestmark``, a file) of operator ``op`` (a
    ``Declared``) on a part the vendor has no kernel for it on (``op.runs_on``): its calls are
    refused there, as :data:`REFUSAL_TEST` checks. The reason names the vendor file and rule
    the declaration's ``parts`` come from (``acl_py.ops.configured``'s ``source``)."""
    part = _this_part()
    has = runs_here(op)
    source = getattr(op.parts, "source", None) or "its declaration's parts"
    family = (short_soc_version(part) or part).lower()
    return pytest.mark.skipif(not has, reason=f"{part}: no {op.short_name} kernel (none for "
                              f"{family} in {source}; the refusal: "
                              f"{REFUSAL_TEST}[{op.short_name}])")


def skip_without_bf16(*dtypes):
    """Skips the calling test where one of ``dtypes`` is BFLOAT16 and this process's part has
    none (such calls are refused there, as the emulator's operator tests check)."""
    from acl_py.soc import supports_bfloat16
    if any(getattr(d, "name", d) == "bfloat16" for d in dtypes) and not supports_bfloat16():
        pytest.skip(f"{_this_part()}: no BF16 (no support_bf16=1 in the part's platform "
                    "configuration, hicann/runtime src/platform/platform_config/; such calls "
                    "are refused, as the operator's tests check)")


def _carries_bf16(case):
    if isinstance(case, (tuple, list)):
        return any(map(_carries_bf16, case))
    return getattr(case, "name", case) == "bfloat16"


def bf16_where_it_runs(cases):
    """``cases`` (a parametrize list: dtypes, or tuples of them) less those carrying BFLOAT16
    where this process's part has none: such a case could never run here (the call is
    refused, as the operator's tests check), so it is no test rather than a skip, as with
    :func:`only_where`; the parts with BF16 run it."""
    from acl_py.soc import supports_bfloat16
    cases = list(cases)
    return cases if supports_bfloat16() else [c for c in cases if not _carries_bf16(c)]


def event_waits_take_a_timeout():
    """Whether an event wait's own timeout reaches the device on this process's part: CANN's
    runtime hands it on where the part's waits take one (StreamWaitEventTimeout::CUSTOM: the
    Atlas A2/A3 series and Ascend 950; hicann/runtime src/runtime/api/api_c_stream.cc
    rtStreamWaitEventWithTimeout, src/runtime/config/*/dev_info_reg.cc). Elsewhere the wait
    lasts as aclrtSetOpWaitTimeout says (no limit unless set): a wait nothing releases holds
    for ever, so a test relying on the timeout releases it itself there."""
    return short_soc_version(_this_part()) in ("Ascend910B", "Ascend910_93", "Ascend950")


def has_stream_control():
    """Whether this process's part has the task scheduler's stream control: it stops and
    aborts streams and runs the stream value tasks (aclrtStreamStop/aclrtStreamAbort,
    aclrtValueWrite/aclrtValueWait; RT_FEATURE_TASK_VALUE_WAIT), and takes a NULL stream as
    the default one where the runtime asks GetCurStream (aclrtStreamAbort,
    aclrtSetStreamFailureMode, aclrtMemcpy2dAsync; RT_FEATURE_DEVICE_CTRL_SQ, runtime.cc
    GetCurStream): the Atlas A2/A3 series and Ascend 950 (hicann/runtime
    src/runtime/config/{910_B_93,950}/dev_info_reg.cc). Elsewhere the calls are refused
    with 207000, the NULL stream with 107000 (test_emulator_streams and
    test_emulator_memcpy_2d check the refusals on each kind of part)."""
    return short_soc_version(_this_part()) in ("Ascend910B", "Ascend910_93", "Ascend950")


def copies_2d_device_to_device():
    """Whether this process's part takes an asynchronous device-to-device 2D copy
    (aclrtMemcpy2dAsync): the Atlas A2/A3 series and Ascend 950, as the API reference's
    aclrtMemcpy2dAsync says; the Atlas training and inference series refuse it (100000:
    test_emulator_memcpy_2d's test_atlas_training_and_inference_parts)."""
    return short_soc_version(_this_part()) not in ("Ascend910", "Ascend310P")


def reports_memory_usage():
    """Whether this process's part reports device memory per module (aclrtGetMemUsageInfo):
    every part but Ascend 950, which the API reference lists as not supported
    (hicann/runtime docs/zh/api_ref/11-01_device_memory_malloc_and_free.md,
    aclrtGetMemUsageInfo's product table); there the call is refused with 207000
    (test_emulator_memory_usage checks the refusal)."""
    return short_soc_version(_this_part()) != "Ascend950"


def only_where(condition):
    """A decorator defining the test only in a process whose part meets ``condition`` (read at
    collection: the part is fixed for a process): on another part it could never run, so it
    is no test there (None) rather than a skip; the parts meeting it run it (their own run,
    or their child: :func:`run_on_parts`). Apply it as the outermost decorator."""
    return lambda test: test if condition else None


def cases_where(condition, *cases):
    """``cases`` (a parametrize list's entries) in a process whose part meets ``condition``,
    else none: spliced into the list (``[*cases_where(BF16_PART, BF16), F16]``), a case that
    could never run here is no test, as with :func:`only_where`, and the parts meeting
    ``condition`` run it."""
    return list(cases) if condition else []


def on_this_part(argnames, cases, *, part=lambda case: case, ids=None):
    """``pytest.mark.parametrize(argnames, ...)`` over those of ``cases`` about this process's
    part (``part(case)`` names the part a case is about; ``ids``: a list matching ``cases``):
    a case about another part is no test here, where it could never run, but its part's child
    (:func:`run_on_parts`, selecting by the part's name in the test's id) collects and runs
    it. With no case about this part the decorated test is not defined (None: no test rather
    than one that skips), so apply it as the outermost decorator."""
    ids = list(ids) if ids is not None else [None] * len(cases)
    here = [(c, i) for c, i in zip(cases, ids) if part(c) == _this_part()]

    def decorate(test):
        if not here:
            return None
        return pytest.mark.parametrize(argnames, [c for c, _ in here],
                                       ids=None if ids[0] is None else [i for _, i in here])(test)
    return decorate


def run_on_parts(parts, select, *, min_passed=1, skips=True):
    """The test, parametrized over ``parts``, that runs this file's tests matching
    ``select`` (a ``-k`` expression, or a function of the part giving one) on each part and
    passes when they all did: none failed, every selected test reported, at least
    ``min_passed`` passed, and (``skips=False``) none was skipped. Bind it to a ``test_``
    name in the file. With no part to run on (``parts`` empty: the file's own run here is
    the check) it gives None, so no test is generated rather than one that skips."""
    if not parts:
        return None

    @pytest.mark.no_leak_check  # the tests run in a child process, with their own leak check
    @pytest.mark.parametrize("part", list(parts))
    def test_on_other_parts(part, request):
        runs = request.config.pluginmanager.get_plugin(PLUGIN_NAME)
        assert runs is not None and not runs.child, "a part child runs no part checks"
        runs.check(os.path.realpath(request.node.path), part)

    return getattr(pytest.mark, MARKER)(select=select, min_passed=min_passed,
                                        skips=skips)(test_on_other_parts)


@dataclass
class _Selection:
    """One file's tests on one part."""
    file: str
    select: str
    min_passed: int
    skips: bool

    def command(self, part):
        return (f"ACL_EMU_SOC={part} {os.path.relpath(sys.executable, ROOT)} -m pytest "
                f"{os.path.relpath(self.file, ROOT)} -k {shlex.quote(self.select)}")


@dataclass
class _Child:
    """One part's child process and what it reported."""
    part: str
    selections: "dict[str, _Selection]"     # file -> its selection
    dir: str
    proc: "subprocess.Popen | None" = None
    started: float = 0.0
    seconds: float = 0.0
    returncode: "int | None" = None
    selected: "set[str]" = field(default_factory=set)       # node ids
    outcomes: "dict[str, str]" = field(default_factory=dict)   # node id -> outcome
    texts: "dict[str, list[str]]" = field(default_factory=dict)  # node id -> failure/skip text

    @property
    def report(self):
        return os.path.join(self.dir, "report.jsonl")

    @property
    def log(self):
        return os.path.join(self.dir, "output.txt")

    def start(self):
        # each selection joined to its file's name: -k matches a test's module by its file
        # name, and no test file's name is part of another's
        expr = " or ".join(f"({os.path.basename(f)} and ({s.select}))"
                           for f, s in self.selections.items())
        env = dict(os.environ, ACL_EMU_SOC=self.part)
        env[REPORT_ENV] = self.report
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                 "--basetemp", os.path.join(self.dir, "tmp"), "-k", expr,
                 *self.selections], stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
        self.started = time.monotonic()

    def poll(self):
        """True once the child has ended (its report read)."""
        if self.returncode is not None:
            return True
        if self.proc is None:
            return False
        rc = self.proc.poll()
        if rc is None and time.monotonic() - self.started > TIMEOUT:
            self.proc.kill()
            rc = self.proc.wait()
        if rc is None:
            return False
        self.seconds = time.monotonic() - self.started
        self.returncode = rc
        self._read_report()
        return True

    def _read_report(self):
        if not os.path.exists(self.report):
            return
        with open(self.report) as f:
            for line in f:
                r = json.loads(line)
                if "selected" in r:
                    self.selected.update(r["selected"])
                    continue
                node, outcome = r["nodeid"], r["outcome"]
                if outcome == "failed":
                    self.outcomes[node] = "failed"
                elif outcome == "skipped":
                    self.outcomes[node] = "skipped"
                elif r["when"] == "call" and self.outcomes.get(node) != "failed":
                    self.outcomes[node] = "passed"
                if r.get("text"):
                    self.texts.setdefault(node, []).append(f"[{r['when']}] {r['text']}")

    def output_tail(self, n=4000):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()[-n:]
        except OSError:
            return ""

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _file_of(nodeid):
    return os.path.realpath(os.path.join(ROOT, nodeid.split("::", 1)[0]))


class PartRuns:
    """The pytest plugin: in the session, plans and runs one child per part and judges each
    file's tests; in a child (:data:`REPORT_ENV` set), leaves the checks out and reports."""

    def __init__(self, config):
        self.config = config
        self.report = os.environ.get(REPORT_ENV)
        self.child = self.report is not None
        self.children: "dict[str, _Child]" = {}     # part -> its child, in the order needed
        self.dir = None
        config.addinivalue_line(
            "markers", f"{MARKER}(select, min_passed, skips): the test made by "
            "tests/_part_runs.py run_on_parts (runs the file's selection on another part)")

    # ---- the session ----

    def pytest_collection_finish(self, session):
        if self.child:
            self._write({"selected": [it.nodeid for it in session.items]})
            return
        if session.config.option.collectonly:
            return
        for it in session.items:
            mark = it.get_closest_marker(MARKER)
            if mark is None:
                continue
            part = it.callspec.params.get("part")
            if not isinstance(part, str):
                continue
            select = mark.kwargs["select"]
            if callable(select):
                select = select(part)
            if self.dir is None:
                self.dir = tempfile.mkdtemp(prefix="acl-py-parts-")
            child = self.children.get(part)
            if child is None:
                child = self.children[part] = _Child(part, {},
                                                     os.path.join(self.dir, part))
                os.mkdir(child.dir)
            file = os.path.realpath(it.path)
            child.selections[file] = _Selection(
                file, select, mark.kwargs["min_passed"], mark.kwargs["skips"])
        self._pump(self._spare_cores())

    @staticmethod
    def _spare_cores():
        """Children at once while the session runs tests: the cores it does not use."""
        return max(1, (os.cpu_count() or 1) - 1)

    def _pump(self, at_once):
        """Reaps ended children and starts waiting ones, up to ``at_once`` running."""
        running = sum(1 for c in self.children.values()
                      if c.proc is not None and not c.poll())
        for c in self.children.values():
            if running >= at_once:
                break
            if c.proc is None:
                c.start()
                running += 1

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logfinish(self, nodeid, location):
        if self.children:
            self._pump(self._spare_cores())

    def check(self, file, part):
        """The part's child's verdict on ``file``'s selection (waits for the child)."""
        child = self.children.get(part)
        sel = child and child.selections.get(file)
        assert sel is not None, f"{file} declares no selection for {part}"
        if child.proc is None:
            child.start()
        while not child.poll():
            # this process only waits: every core may run a child
            self._pump(os.cpu_count() or 1)
            time.sleep(0.05)
        tests = sorted(n for n in child.selected if _file_of(n) == file)
        outcomes = {n: child.outcomes.get(n, "did not report") for n in tests}
        count = Counter(outcomes.values())
        where = (f"{part}, {os.path.basename(file)} (selection {sel.select!r}: "
                 f"{len(tests)} tests; child exit status {child.returncode})")
        failed = [n for n, o in outcomes.items() if o in ("failed", "did not report")]
        if failed or child.returncode not in (0, 1) or (child.returncode == 1 and not any(
                o == "failed" for o in child.outcomes.values())):
            details = "\n\n".join(
                f"{n} on {part}: {outcomes[n]}\n" + "\n".join(child.texts.get(n, []))[-6000:]
                for n in failed)
            if not failed or any(n not in child.texts for n in failed):
                # a crash, a collection error: what the child printed says what happened
                details += f"\n\nthe child's output (end):\n{child.output_tail()}"
            what = (f"{len(failed)} failed or did not report: "
                    f"{[n.split('::', 1)[1] for n in failed]}" if failed else
                    "the child ended without a test failing (a collection error, a crash)")
            pytest.fail(f"on {where}: {what}\n\n{details}\n\n"
                        f"to repeat the file's run: {sel.command(part)}", pytrace=False)
        if count["passed"] < sel.min_passed:
            pytest.fail(f"on {where}: {count['passed']} passed, at least {sel.min_passed} "
                        f"expected\n{child.output_tail()}\nto repeat: {sel.command(part)}",
                        pytrace=False)
        if count["skipped"] and not sel.skips:
            skipped = {n: child.texts.get(n) for n, o in outcomes.items() if o == "skipped"}
            pytest.fail(f"on {where}: {count['skipped']} skipped, none expected: {skipped}\n"
                        f"to repeat: {sel.command(part)}", pytrace=False)

    def pytest_terminal_summary(self, terminalreporter):
        ran = [c for c in self.children.values() if c.returncode is not None]
        if not ran:
            return
        terminalreporter.section("tests on other parts (one child process per part)")
        for c in ran:
            count = Counter(c.outcomes.values())
            terminalreporter.write_line(
                f"{c.part}: {count['passed']} passed, {count['skipped']} skipped, "
                f"{count['failed']} failed of {len(c.selected)} selected in "
                f"{len(c.selections)} files, {c.seconds:.1f} s (exit status {c.returncode})")

    def pytest_sessionfinish(self, session):
        for c in self.children.values():
            c.stop()
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)

    # ---- a child ----

    def pytest_collection_modifyitems(self, config, items):
        if not self.child:
            return
        checks = [it for it in items if it.get_closest_marker(MARKER)]
        if checks:
            items[:] = [it for it in items if not it.get_closest_marker(MARKER)]
            config.hook.pytest_deselected(items=checks)

    def pytest_runtest_logreport(self, report):
        if not self.child:
            return
        text = ""
        if report.failed:
            text = report.longreprtext + "".join(
                f"\n--- {name} ---\n{content}" for name, content in report.sections)
        elif report.skipped:
            text = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(
                report.longrepr)
        self._write({"nodeid": report.nodeid, "when": report.when,
                     "outcome": report.outcome, "text": text})

    def _write(self, record):
        with open(self.report, "a") as f:
            f.write(json.dumps(record) + "\n")
