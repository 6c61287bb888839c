"""Stream-ordered release: keep objects, and put off frees, until a stream has passed a point.

This is the one home of that bookkeeping; streams, memory and executors use it.

* A :class:`Timeline` per stream numbers the submissions enqueued on it (``seq``) and records
  how many are known complete (``done``: a synchronize of the stream, of a later recorded
  event or of the device, the stream's destruction). Work deferred to a number (``defer``)
  runs, on the thread that learned of the completion, once ``done`` reaches it.
* A resource that stream work may use (an allocation, an executor) keeps a :class:`Uses`
  record: timeline -> number of the last submission using it. :func:`release_after` runs its
  release once no timeline has such a submission pending.
* A :class:`Lifetime` stands in a record for an owner still alive (a repeatable executor that
  may run again): what is linked to that record waits for the owner's end as for stream work.

Numbers are only compared, never trusted blindly: a timeline that is closed has nothing
pending (its destruction drained it).
"""
from __future__ import annotations

import threading
import weakref
from collections import deque

from . import runtime as _rt

_timelines = weakref.WeakSet()    # live timelines


class Timeline:
    """The submission counter of one stream and the work deferred to its numbers. Subclassed
    by the stream module's state (which adds the handle and the synchronize)."""

    __slots__ = ("device", "seq", "done", "deferred", "kept", "lock", "run_lock", "running",
                 "closed", "gen", "__weakref__")

    def __init__(self, device):
        self.device = device
        self.seq = 0           # submissions so far
        self.done = 0          # submissions known complete
        self.deferred = []     # (seq, fn, arg): fn(arg) once done >= seq
        # (seq, obj): obj held until done >= seq. A deque: appends and pops from both ends
        # are atomic, so the hot path takes no lock.
        self.kept = deque()
        # Reentrant: a garbage collection while it is held (an allocation in defer or
        # complete) may run a release that defers work on this very timeline.
        self.lock = threading.RLock()
        # Held while deferred work runs. A thread whose synchronize finds its work claimed by
        # another thread's complete() waits on it, so that when synchronize returns, what
        # waited for the stream (a copy back into a NumPy array) has run, not just started.
        self.run_lock = threading.RLock()
        self.running = 0       # complete() calls between claiming work and finishing it
        self.closed = False
        self.gen = _rt.gen
        _timelines.add(self)

    def submit(self, keep=None):
        """Numbers one submission (call it right after the enqueue succeeded); ``keep`` is
        held until it is complete. Returns the number.

        Record the submission's uses as ``uses[timeline] = timeline.seq`` (the newest
        number, read in the store itself), not as the number returned: the thread may be
        switched out between this call and its records, and another thread's later
        submission using the same buffer, recorded meanwhile, would be overwritten by the
        earlier number; a synchronize that reached only the earlier one would then free the
        buffer under the later one. Under the GIL the read and the store are one step (no
        call, no loop in between), so a record never goes back; a later number only makes
        the wait conservative."""
        # No lock for the counter (hot path): two racing submissions may share a number,
        # which is harmless: a number is read only after the enqueue it tags returned, so
        # any number <= the target a synchronize read first tags work enqueued before it.
        seq = self.seq = self.seq + 1
        if keep is not None:
            self.kept.append((seq, keep))
        return seq

    def defer(self, seq, fn, arg):
        """Runs ``fn(arg)`` once submissions up to ``seq`` are complete (now, if they are)."""
        with self.lock:
            if self.done < seq and not self.closed:
                self.deferred.append((seq, fn, arg))
                return
        fn(arg)

    def complete(self, upto):
        """Marks submissions up to ``upto`` complete and runs what waited for them. Returns
        the errors of deferred functions (every one runs)."""
        kept = self.kept
        if kept:
            # Objects held for work now complete are dropped (oldest first). Another thread
            # may pop the same entry first: then this one stops.
            try:
                while kept[0][0] <= upto:
                    kept.popleft()
            except IndexError:
                pass
        if not self.deferred:
            # Nothing waits: advance the counter without the locks (the hot path of a
            # launch + synchronize loop). A racing complete may store a smaller number after
            # a larger one, which only makes later checks conservative; work deferred by a
            # racing thread meanwhile is picked up below.
            if upto > self.done:
                self.done = upto
            if not self.deferred:
                if self.running:
                    self.wait_running()
                return []
        with self.run_lock:
            with self.lock:
                if upto > self.done:
                    self.done = upto
                ready = [d for d in self.deferred if d[0] <= self.done]
                if not ready:
                    return []
                self.running += 1   # before the list shrinks: see wait_running()
                self.deferred = [d for d in self.deferred if d[0] > self.done]
            errs = []
            try:
                for _seq, fn, arg in ready:
                    try:
                        fn(arg)
                    except Exception as e:
                        errs.append(e)
            finally:
                self.running -= 1
            return errs

    def drop_after_fork(self):
        """In a child forked from an initialized session: closed, its deferred and kept
        work dropped unrun (it frees the parent's memory), fresh locks (a parent's thread
        may have held them). Subclasses add theirs."""
        self.closed = True
        self.deferred = []
        self.kept = deque()
        self.running = 0
        self.lock = threading.RLock()
        self.run_lock = threading.RLock()

    def wait_running(self):
        """Waits until deferred work another thread claimed has run. Callers read
        ``deferred`` (empty) before ``running``; complete() raises ``running`` before it
        empties the list, so claimed-but-unfinished work is always seen."""
        if self.running:
            with self.run_lock:
                pass

    def flush(self):
        """Runs everything deferred, complete or not (teardown, after a failed synchronize).
        Returns the errors."""
        return self.complete(self.seq)

    def close(self):
        """The stream is gone (its destruction drained it): everything is complete."""
        with self.lock:
            self.closed = True
        _timelines.discard(self)


def record_uses(timeline, *resources):
    """Records that the submission just enqueued on ``timeline`` (numbered by its enqueue)
    uses each of ``resources`` (their :class:`Uses`); returns a number at least its own. Each
    record is the timeline's newest number: see :meth:`Timeline.submit`."""
    for r in resources:
        r.uses[timeline] = timeline.seq
    return timeline.seq


class Uses(dict):
    """What stream work a resource waits for: timeline -> number of the last submission
    using it. ``link(other)`` counts another record's work as this one's too (a repeatable
    executor's runs for the buffers it holds: one record per run instead of one per
    buffer)."""

    # No __init__ and no __slots__: made on every allocation, so made by dict's own
    # constructor; ``links`` is a class default until set: then a list of weak references
    # to the linked records.
    links = None

    def pending(self):
        """[(timeline, number)] of the work not known complete."""
        out = [(tl, seq) for tl, seq in list(self.items()) if tl.done < seq and not tl.closed]
        links = self.links
        if links:
            for ref in list(links):
                rec = ref()
                if rec is not None:
                    out += rec.pending()
        return out

    def link(self, other):
        """Counts ``other.pending()`` as this record's own from now on, for as long as
        ``other`` lives: its owner (an executor) may run again, however idle it is now, and
        keeps it while it may. Records gone are pruned. The list is only appended to and
        removed from, so links made at once by several threads are all kept."""
        links = self.__dict__.setdefault("links", [])
        for ref in list(links):
            if ref() is None:
                try:
                    links.remove(ref)   # a dead reference equals itself only
                except ValueError:      # pruned meanwhile by another thread
                    pass
        links.append(weakref.ref(other))

    def unlink(self, other):
        """Undoes one :meth:`link` to ``other`` (an executor no longer runs on this memory),
        keeping what ``other`` has recorded so far: its pending stream submissions become
        this record's own, so the work already queued is still waited for, and its future
        work, its :class:`Lifetime` included, no longer is. Copied before the link goes, so
        a release checking meanwhile sees one or the other."""
        for tl, seq in other.pending():
            if not isinstance(tl, Lifetime) and self.get(tl, 0) < seq:
                self[tl] = seq
        links = self.links
        if links:
            for ref in list(links):
                if ref() is other:
                    try:
                        links.remove(ref)
                    except ValueError:      # removed meanwhile by another thread
                        continue
                    return


class Lifetime:
    """A point reached once, when its owner ends (a repeatable executor's close): a Uses
    entry ``{lifetime: 1}`` is pending until :meth:`end`, so a resource linked to a record
    holding it (the memory of the executor's arguments) is released only after that, then
    after whatever stream work the record still has. Shaped like a Timeline for Uses and
    release_after (``done``, ``closed``, ``defer``); not a stream: no synchronize completes
    it, and a synchronous copy does not wait for it (:meth:`wait_if_open`)."""

    __slots__ = ("done", "closed", "deferred", "lock")

    def __init__(self):
        self.done = 0
        self.closed = False
        self.deferred = []     # (fn, arg): fn(arg) at end()
        self.lock = threading.RLock()   # reentrant, as Timeline's (a GC inside defer)

    def defer(self, seq, fn, arg):
        with self.lock:
            if not self.done:
                self.deferred.append((fn, arg))
                return
        fn(arg)

    def wait_if_open(self):
        return True

    def end(self):
        """The owner has ended: runs what waited for it (once). Returns the errors."""
        with self.lock:
            self.done = 1
            ready, self.deferred = self.deferred, []
        errs = []
        for fn, arg in ready:
            try:
                fn(arg)
            except Exception as e:
                errs.append(e)
        return errs


class _Waiter:
    """Runs ``fn(arg)`` once a Uses record has nothing pending (see release_after)."""

    __slots__ = ("uses", "fn", "arg", "order", "left", "lock", "made_in")

    def __init__(self, uses, fn, arg, order):
        self.uses = uses
        self.fn = fn
        self.arg = arg
        self.order = order
        self.lock = threading.Lock()
        self.made_in = _rt.gen      # the released resource's session, for a retry's Releaser

    def wait(self, pending):
        with self.lock:
            self.left = len(pending)
        for tl, seq in pending:
            try:
                tl.defer(seq, self._one_done, None)
            except Exception:
                # The stream passed the work meanwhile (another thread synchronized it), so
                # the release ran here, and failed: _one_done has registered it for a retry,
                # which owns it now. Raising would make the caller's releaser own it too.
                pass

    def _one_done(self, _arg):
        with self.lock:
            self.left -= 1
            if self.left:
                return
        # Submissions recorded meanwhile (a linked executor ran again) are waited for too.
        pending = self.uses.pending()
        if pending:
            self.wait(pending)
            return
        try:
            self.fn(self.arg)
        except Exception:
            _rt.Releaser(None, self.fn, (self.arg,), self.order, self.made_in)  # retried later
            raise


def release_after(uses, fn, arg, order):
    """Runs ``fn(arg)`` now if ``uses`` has nothing pending, else once every timeline has
    passed the work it records (on the thread that learns it). A deferred ``fn`` that fails
    is registered as an orphan of ``order`` (retried by ``release_unused`` and teardown) and
    its error reported by the synchronize that ran it (by the retry, if the stream passed the
    work while this call was deferring it, so that it ran here). Once deferred, the release
    belongs to the wait: nothing raised here means the caller still owns it. Returns True if
    it ran now."""
    pending = uses.pending()
    if not pending:
        fn(arg)
        return True
    _Waiter(uses, fn, arg, order).wait(pending)
    return False



def close_then_release(st, fn, order):
    """A stream-ordered releaser's step: ``st`` (with ``closed`` and ``uses``) is closed now
    and ``fn(st)`` runs once the timelines that used it have passed that work (at once when
    none has: :func:`release_after`). A failure (an interrupt is none: see Releaser.release)
    leaves it owned, open again unless the teardown runs, so close() may be retried."""
    st.closed = True
    try:
        release_after(st.uses, fn, st, order)
    except Exception:
        st.closed = _rt.tearing_down
        raise

# ---- every timeline ------------------------------------------------------------------------

def timelines():
    """The live timelines."""
    return list(_timelines)


def marks_of_device(dev):
    """[(timeline, number)] of the submissions so far on the device's live timelines."""
    return [(t, t.seq) for t in list(_timelines) if t.device == dev and not t.closed]


def complete_marks(marks):
    """Marks each (timeline, number) complete; returns the errors of what then ran."""
    errs = []
    for t, seq in marks:
        errs += t.complete(seq)
    return errs


def flush_all():
    """Teardown: runs everything deferred on every timeline. Returns the errors."""
    errs = []
    for t in list(_timelines):
        errs += t.flush()
    return errs


def forget_all():
    """Teardown, after the releases: every timeline is closed."""
    for t in list(_timelines):
        t.flush()
        t.closed = True
    _timelines.clear()
    return []


def _drop_after_fork():
    """Forked child (runtime "fork" step): every timeline is the parent's."""
    for t in list(_timelines):
        t.drop_after_fork()
    _timelines.clear()


_rt.register_step("before_streams", flush_all)
_rt.register_step("forget", forget_all)
_rt.register_step("fork", _drop_after_fork)
