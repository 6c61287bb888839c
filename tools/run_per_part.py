"""Runs each test file whole on each emulated part, one process per file and part, and
prints a table of what each run gave.

    .venv/bin/python tools/run_per_part.py [--parts P ...] [--timeout S] [--jobs N]
                                           [--json FILE] [--compare FILE] [tests/test_x.py ...]

A cell is ``ok`` (every test passed or was skipped, with the counts), ``FAIL n`` (n tests
failed or errored), ``HANG`` (the run outlived ``--timeout`` and was stopped: the tests it
was running are listed), or ``ERR`` (the run ended without running its tests: a collection
error, a crash). The failing tests follow the table, each with the last line of its
failure.

Each run is ``ACL_EMU_SOC=<part> python -m pytest <file>`` with the environment variable of
``tests/_part_runs.py`` (:data:`REPORT_ENV`) set, which makes the run report each test's
outcome and leaves out the file's ``test_on_other_parts`` checks: those run a selection of
the same file on the other parts, which this tool covers by running the whole file on each
of them. The part ``default`` runs with ``ACL_EMU_SOC`` unset.

Default parts: ``tests/_part_runs.py``'s PARTS; default files: every ``tests/test_*.py``.
A run takes one core: on a shared machine keep ``--jobs`` at 1 (the default).
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from _part_runs import PARTS, REPORT_ENV  # noqa: E402  (the tests' own list and protocol)

DEFAULT = "default"


# The process groups of the runs under way: stopped with the tool (their sessions are their
# own, so a Ctrl-C or a kill of the tool does not reach them).
_RUNNING = set()
_RUNNING_LOCK = threading.Lock()


def _stop_running_runs():
    with _RUNNING_LOCK:
        for pgid in _RUNNING:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def run_file(part, file, timeout, python):
    """One file's run on one part: {"status", "seconds", "counts", "failures", "running"}."""
    with tempfile.TemporaryDirectory(prefix="acl-py-per-part-") as tmp:
        report = os.path.join(tmp, "report.jsonl")
        env = dict(os.environ)
        env.pop("ACL_EMU_SOC", None)
        if part != DEFAULT:
            env["ACL_EMU_SOC"] = part
        env[REPORT_ENV] = report
        started = time.monotonic()
        with open(os.path.join(tmp, "output.txt"), "w+") as out:
            # a session of its own: a hang is stopped with every process it started
            proc = subprocess.Popen(
                [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp",
                 os.path.join(tmp, "basetemp"), file],
                stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT,
                start_new_session=True)
            with _RUNNING_LOCK:
                _RUNNING.add(proc.pid)
            try:
                rc = proc.wait(timeout=timeout)
                hung = False
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                rc = proc.wait()
                hung = True
            finally:
                with _RUNNING_LOCK:
                    _RUNNING.discard(proc.pid)
            out.seek(0)
            output = out.read()
        seconds = time.monotonic() - started
        outcomes, texts, started_tests = _read_report(report)
    counts = Counter(outcomes.values())
    failures = {n: texts.get(n, "") for n, o in outcomes.items() if o == "failed"}
    running = sorted(started_tests - set(outcomes)) if hung else []
    if hung:
        status = "HANG"
    elif failures:
        status = "FAIL"
    elif rc in (0, 5):      # 5: no tests collected (every one a part check, say)
        status = "ok"
    else:                   # a collection error, a crash: what the run printed says which
        status, failures = "ERR", {"(the run)": output[-2000:]}
    return {"status": status, "seconds": round(seconds, 1), "counts": dict(counts),
            "failures": failures, "running": running, "returncode": rc}


def _read_report(path):
    """Each test's outcome, each failure's text, and the tests that began (a test that
    began without an outcome was running when a hung run was stopped)."""
    outcomes, texts, started = {}, {}, set()
    if not os.path.exists(path):
        return outcomes, texts, started
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if "selected" in r:
                continue
            node, outcome = r["nodeid"], r["outcome"]
            started.add(node)
            if outcome == "failed":
                outcomes[node] = "failed"
                texts[node] = r.get("text", "")
            elif outcome == "skipped":
                outcomes.setdefault(node, "skipped")
            elif r["when"] == "call":
                outcomes.setdefault(node, "passed")
    return outcomes, texts, started


def cell(result):
    c = result["counts"]
    if result["status"] == "ok":
        return f"ok {c.get('passed', 0)}p {c.get('skipped', 0)}s"
    if result["status"] == "FAIL":
        return f"FAIL {len(result['failures'])}"
    return result["status"]


def last_line(text):
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:160] if lines else ""


def _terminated(signum, frame):
    raise SystemExit(128 + signum)


def main(argv=None):
    signal.signal(signal.SIGTERM, _terminated)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="test files (default: every tests/test_*.py)")
    ap.add_argument("--parts", nargs="+", default=list(PARTS),
                    help=f"parts to run on (default: {' '.join(PARTS)}; "
                         f"'{DEFAULT}' leaves ACL_EMU_SOC unset)")
    ap.add_argument("--timeout", type=float, default=600,
                    help="seconds a file's run may take before it counts as a hang")
    ap.add_argument("--jobs", type=int, default=1, help="runs at once (default 1)")
    ap.add_argument("--json", help="write the results to this file")
    ap.add_argument("--compare", help="a --json file of an earlier run: mark changed cells")
    args = ap.parse_args(argv)

    files = args.files or sorted(glob.glob(os.path.join(ROOT, "tests", "test_*.py")))
    files = [os.path.relpath(os.path.realpath(f), ROOT) for f in files]
    python = os.path.join(ROOT, ".venv", "bin", "python")
    if not os.path.exists(python):
        python = sys.executable
    earlier = {}
    if args.compare:
        with open(args.compare) as f:
            earlier = json.load(f)

    results = {p: {} for p in args.parts}
    # parts one after another (each over its files), so a part's column is complete early
    for part in args.parts:
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futures = {f: pool.submit(run_file, part, f, args.timeout, python)
                       for f in files}
            try:
                for f in files:
                    r = results[part][f] = futures[f].result()
                    print(f"{part:18} {f:45} {cell(r):14} {r['seconds']:7.1f} s",
                          file=sys.stderr, flush=True)
            except BaseException:   # Ctrl-C, a kill (SIGTERM, below): no run outlives us
                pool.shutdown(wait=False, cancel_futures=True)
                _stop_running_runs()
                raise
        if args.json:       # written after each part: a long run keeps what it has
            with open(args.json, "w") as out:
                json.dump(results, out, indent=1)

    width = max(len(os.path.basename(f)) for f in files)
    cols = [max(len(p), 14) for p in args.parts]
    print(f"{'file':{width}}  " + "  ".join(f"{p:{w}}" for p, w in zip(args.parts, cols)))
    bad = []
    for f in files:
        row = []
        for p, w in zip(args.parts, cols):
            r = results[p][f]
            text = cell(r)
            before = earlier.get(p, {}).get(f)
            if before is not None and cell(before).split()[0] != text.split()[0]:
                text += " *"
            row.append(f"{text:{w}}")
            if r["status"] != "ok":
                bad.append((p, f, r))
        print(f"{os.path.basename(f):{width}}  " + "  ".join(row))
    totals = {p: Counter(r["status"] for r in results[p].values()) for p in args.parts}
    print(f"{'(files)':{width}}  " + "  ".join(
        f"{'%d ok %d bad' % (t['ok'], sum(t.values()) - t['ok']):{w}}"
        for t, w in zip(totals.values(), cols)))
    if earlier:
        print("(*: the status changed from the compared run)")
    for p, f, r in bad:
        print(f"\n{p} {f}: {r['status']} (exit status {r['returncode']}, {r['seconds']} s)")
        for n in r["running"]:
            print(f"  running when stopped: {n}")
        for n, text in r["failures"].items():
            print(f"  {n}: {last_line(text)}")
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
