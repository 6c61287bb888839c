"""A thin wrapper of CANN's two-phase aclnn API, shared by every operator acl-py binds.

Every aclnn operator ``aclnnFoo`` is two C entry points::

    aclnnStatus aclnnFooGetWorkspaceSize(<args...>, uint64_t *workspaceSize,
                                         aclOpExecutor **executor);          // phase one
    aclnnStatus aclnnFoo(void *workspace, uint64_t workspaceSize,
                         aclOpExecutor *executor, aclrtStream stream);        // phase two

An :class:`Operator` describes one by its name and its argument list; it then does the rest:

* phase one, a failure raised as the typed error of its status (``acl_py.errors``) carrying
  the code and ``aclGetRecentErrMsg()``;
* the workspace, from the caller's allocator (the device's memory pool by default), taken only
  when phase one asks for more than 0 bytes;
* phase two on a stream;
* lifetimes. A single-use executor (:meth:`Operator.launch`) is released by the library when
  phase two succeeds; when phase two fails acl-py destroys it. A repeatable one
  (:meth:`Operator.prepare`, ``aclSetAclOpExecutorRepeatable`` right after phase one) runs any
  number of times and is destroyed (``aclDestroyAclOpExecutor``) by :meth:`Executor.close`,
  garbage collection or teardown. The workspace, every tensor buffer the launch touches and the
  argument objects are kept until the stream has synchronized past the launch
  (``Stream.mark_used``: stream-ordered release), and so is a closed executor's destruction.

Adding an operator is declarative: its prototype in ``bindings/include`` (cffi reads the
headers), then one description here. For example ``aclnnLayerNorm`` (the forward), whose
phase one takes ``(input, normalizedShape, weightOptional, biasOptional, double eps, out,
meanOutOptional, rstdOutOptional, ...)``::

    LAYER_NORM = Operator("aclnnLayerNorm", (
        tensor("input"), int_array("normalizedShape"), tensor("weightOptional"),
        tensor("biasOptional"), value("eps"), tensor("out"), tensor("meanOutOptional"),
        tensor("rstdOutOptional")))

    # one call: phase one, workspace, phase two, on `stream`
    LAYER_NORM.launch((x, IntArray([1024]), w, b, 1e-5, y, mean, rstd), device=0,
                      stream=stream)
    # or a repeatable executor for a loop
    with LAYER_NORM.prepare((x, shape, w, b, 1e-5, y, mean, rstd), device=0) as ex:
        for _ in range(100):
            ex.run(stream)

Arguments are given in declaration order: a :class:`~acl_py.DeviceTensor` (its cached
``aclTensor``), an :class:`~acl_py.IntArray` / :class:`~acl_py.BoolArray`, ``None`` (NULL),
a raw cffi pointer (passed as is; its lifetime is the caller's), or, for :func:`value`
parameters, a plain number. The wrapper checks kinds, never operator rules: those are phase
one's, which reports them as typed errors. The user-facing function of an operator (for
example :func:`acl_py.layer_norm_backward`) adds the Python-level checks and output
allocation on top.
"""
from __future__ import annotations

import threading

from .. import memory as _mem
from .. import runtime as _rt
from .. import stream as _stream
from .._ffi import ffi
from ..errors import AclArgumentError, AclTypeError, ClosedError, make_error
from ..tensor import DeviceTensor, _Array

__all__ = ["Param", "tensor", "int_array", "bool_array", "value", "Operator", "Executor",
           "Bound"]

TENSOR = "aclTensor"
INT_ARRAY = "aclIntArray"
BOOL_ARRAY = "aclBoolArray"
VALUE = "value"

_NULL = ffi.NULL
_Stream = _stream.Stream
_CData = ffi.CData


class Param:
    """One parameter of a phase-one function: its C name (used in messages) and kind."""

    __slots__ = ("name", "kind")

    def __init__(self, name, kind):
        self.name = name
        self.kind = kind

    def __repr__(self):
        return f"{self.kind} {self.name}"


def tensor(name):
    """An ``aclTensor *`` parameter (input or output; ``None`` passes NULL)."""
    return Param(name, TENSOR)


def int_array(name):
    """An ``aclIntArray *`` parameter."""
    return Param(name, INT_ARRAY)


def bool_array(name):
    """An ``aclBoolArray *`` parameter."""
    return Param(name, BOOL_ARRAY)


def value(name):
    """A plain C value (``double``, ``int64_t``, ``bool``...) passed as given."""
    return Param(name, VALUE)


def default_allocator(nbytes, device):
    """Workspace from the device's memory pool (reused across calls)."""
    return _mem.get_pool(device).malloc(nbytes)


class Operator:
    """An aclnn operator: ``name`` (the phase-two function), its parameters in phase-one order
    (without the trailing ``workspaceSize``/``executor`` out-parameters), and optionally the
    entry points' names when they do not follow the ``<name>GetWorkspaceSize`` / ``<name>``
    convention. The C functions are bound once, on first use."""

    __slots__ = ("name", "params", "phase_one_name", "phase_two_name", "_fns", "_kinds")

    def __init__(self, name, params, *, get_workspace_size=None, run=None):
        self.name = name
        self.params = tuple(params)
        for p in self.params:
            if not isinstance(p, Param):
                raise TypeError(f"{name}: parameters must be Param objects, got {p!r}")
        self.phase_one_name = get_workspace_size or name + "GetWorkspaceSize"
        self.phase_two_name = run or name
        self._kinds = tuple(p.kind for p in self.params)
        self._fns = None

    def _bind(self):
        fns = self._fns
        if fns is None:
            L = _rt.ensure()
            fns = self._fns = (getattr(L, self.phase_one_name), getattr(L, self.phase_two_name),
                               L.aclSetAclOpExecutorRepeatable, L.aclDestroyAclOpExecutor)
        return fns

    def signature(self):
        return f"{self.phase_one_name}({', '.join(map(repr, self.params))}, " \
               f"uint64_t *workspaceSize, aclOpExecutor **executor)"

    def __repr__(self):
        return f"<acl_py.ops.Operator {self.name}>"

    # ---- argument conversion ----

    def _handles(self, args):
        """(C arguments, buffer states to mark used, objects to keep alive)."""
        if len(args) != len(self._kinds):
            raise AclArgumentError("args", f"{self.name} takes {len(self._kinds)} arguments "
                                   f"({', '.join(p.name for p in self.params)}), got "
                                   f"{len(args)}")
        cargs = []
        bufs = []
        for p, kind, a in zip(self.params, self._kinds, args):
            if a is None:
                cargs.append(_NULL)
            elif kind is TENSOR:
                if type(a) is DeviceTensor or isinstance(a, DeviceTensor):
                    cargs.append(a.handle)
                    bufs.append(a._bst)
                elif isinstance(a, _CData):
                    cargs.append(a)
                else:
                    raise AclTypeError(p.name, f"{self.name}: expected a DeviceTensor, None or "
                                       f"a cffi aclTensor pointer, got {type(a).__name__}")
            elif kind is VALUE:
                cargs.append(a)
            elif isinstance(a, _Array):
                cargs.append(a.handle)
            elif isinstance(a, _CData):
                cargs.append(a)
            else:
                raise AclTypeError(p.name, f"{self.name}: expected an acl_py "
                                   f"{'IntArray' if kind is INT_ARRAY else 'BoolArray'}, None "
                                   f"or a cffi pointer, got {type(a).__name__}")
        return cargs, bufs

    def _phase_one(self, cargs):
        fns = self._fns or self._bind()
        outp = _outparams()
        st = fns[0](*cargs, outp[0], outp[1])
        if st:
            raise make_error(st, self.phase_one_name)
        return outp[0][0], outp[1][0]

    # ---- one call ----

    def launch(self, args, *, device, stream=None, allocator=None):
        """Phase one, workspace, phase two on ``stream`` (default: ``device``'s default
        stream), with a single-use executor. Returns at once (the work is queued); the
        workspace, the tensors' memory and ``args`` are kept until the stream has
        synchronized past the launch.

        Workspace: from ``allocator(nbytes, device)`` (a DeviceBuffer) when given, released
        after the launch; by default a per-stream buffer from the device's memory pool, grown
        when phase one asks for more and reused by the next launches on that stream (they run
        after this one: stream order makes the reuse safe)."""
        s = stream if type(stream) is _Stream else _stream.as_stream(stream, device)
        sst = s._st
        if sst.closed or sst.device != device:
            s = _stream.as_stream(s, device)   # raises the right error
        if _rt._tls.dev != device:
            _rt.activate(device)
        cargs, bufs = self._handles(args)
        size, ex = self._phase_one(cargs)
        if size and allocator is None:
            # The per-stream workspace: taken, launched on and recorded as used under one
            # lock, so another thread growing it cannot free it in between.
            with _ws_lock:
                self._phase_two(ex, size, None, sst, bufs, args, device)
        else:
            self._phase_two(ex, size, allocator, sst, bufs, args, device)

    def _phase_two(self, ex, size, allocator, sst, bufs, args, device):
        fns = self._fns
        wsbuf = None
        own = False
        try:
            if size:
                if allocator is None:
                    wsbuf = _stream_workspace(sst, size, device)
                else:
                    wsbuf = allocator(size, device)
                    own = True
                wsptr = wsbuf.ptr
                bufs.append(wsbuf._bst)
            else:
                wsptr = _NULL
            st = fns[1](wsptr, size, ex, sst.handle)
        except BaseException:
            _destroy_quietly(fns[3], ex)
            if own:
                wsbuf.close()
            raise
        if st:
            err = make_error(st, self.phase_two_name)  # reads the message before anything else
            # A failed phase two releases nothing (docs/emulator.md): destroy it here.
            _destroy_quietly(fns[3], ex)
            if own:
                wsbuf.close()
            raise err
        sst.submit(bufs, args)
        if own:
            wsbuf.close()   # freed once the stream is past this launch

    # ---- one call, arguments converted once ----

    def bind(self, args, *, device):
        """A :class:`Bound` argument list: ``args`` converted to C arguments once, for
        :meth:`launch_bound` to reuse while the caller knows the objects are unchanged (same
        objects, none closed). Holds the C handles only, not ``args``: the caller keeps
        them alive."""
        cargs, bufs = self._handles(args)
        b = Bound(tuple(cargs), device)
        for bst in bufs:
            bst.link(b)
        return b

    def launch_bound(self, b, sst):
        """:meth:`launch` of a :class:`Bound` argument list on stream state ``sst`` (open, of
        ``b.device``, whose device is current on this thread): phase one, the per-stream
        workspace, phase two, one record of the launch (``b.uses``, which the buffers of
        ``b`` count as theirs)."""
        fns = self._fns or self._bind()
        outp = _tls.outp or _outparams()
        st = fns[0](*b.cargs, outp[0], outp[1])
        if st:
            raise make_error(st, self.phase_one_name)
        size = outp[0][0]
        ex = outp[1][0]
        if size:
            with _ws_lock:
                try:
                    wsb = _workspaces.get(sst)
                    if wsb is None or wsb._bst.nbytes < size or wsb._bst.closed:
                        wsb = _stream_workspace(sst, size, b.device)
                    wst = wsb._bst
                    st = fns[1](wst.ptr, size, ex, sst.handle)
                except BaseException:
                    _destroy_quietly(fns[3], ex)
                    raise
                if not st:
                    # Marked before the lock is released: a thread growing the workspace
                    # then frees this one only after the stream is past this launch.
                    seq = sst.seq = sst.seq + 1
                    wst.uses[sst] = seq
        else:
            st = fns[1](_NULL, 0, ex, sst.handle)
            if not st:
                seq = sst.seq = sst.seq + 1
        if st:
            err = make_error(st, self.phase_two_name)
            _destroy_quietly(fns[3], ex)
            raise err
        b.uses[sst] = seq

    # ---- repeatable executor ----

    def prepare(self, args, *, device, allocator=None):
        """Phase one with a repeatable executor and its workspace: an :class:`Executor`
        whose ``run(stream)`` is phase two. The arguments are kept alive with it."""
        return Executor(self, args, device, allocator)


class Bound:
    """C arguments converted once (:meth:`Operator.bind`) and the record of their launches:
    ``uses`` maps each stream state to the sequence number of the last launch there, and the
    arguments' buffers count it as their own pending work (stream-ordered release) instead
    of being marked one by one at every launch. ``closed``: set by the owner when it drops
    the record (the buffers forget it once its launches are complete)."""

    __slots__ = ("cargs", "device", "uses", "closed", "__weakref__")

    def __init__(self, cargs, device):
        self.cargs = cargs
        self.device = device
        self.uses = {}
        self.closed = False


class _TLS(threading.local):
    outp = None


_tls = _TLS()


def _outparams():
    """This thread's (uint64_t *workspaceSize, aclOpExecutor **executor) out-parameters,
    allocated once rather than on every call."""
    p = _tls.outp
    if p is None:
        p = _tls.outp = (ffi.new("uint64_t *"), ffi.new("aclOpExecutor **"))
    return p


# Per-stream workspaces of one-shot launches: stream state -> DeviceBuffer.
_workspaces: dict = {}
_ws_lock = threading.RLock()   # RLock: clear_workspaces may run from a release


def _stream_workspace(sst, size, device):
    """A workspace of at least ``size`` bytes for a launch on stream ``sst``. Launches on one
    stream run in order, so its previous launches are done with the buffer by the time this
    one runs; a buffer outgrown is released stream-ordered (after its last launch)."""
    # Caller holds _ws_lock.
    buf = _workspaces.get(sst)
    if buf is not None and buf._bst.nbytes >= size and not buf._bst.closed:
        return buf
    new = default_allocator(size, device)
    old = _workspaces.pop(sst, None)
    # Forget workspaces of closed streams (their launches are complete).
    for k in [k for k in _workspaces if k.closed]:
        _workspaces.pop(k).close()
    _workspaces[sst] = new
    if old is not None:
        old.close()
    return new


def clear_workspaces():
    """Releases the cached per-stream workspaces (stream-ordered); ``release_unused`` calls
    it."""
    with _ws_lock:
        bufs = list(_workspaces.values())
        _workspaces.clear()
    for b in bufs:
        b.close()


_rt.register_cache(clear_workspaces)


def _destroy_quietly(destroy, ex):
    # Cleanup on an error path: the error being raised matters more than this one.
    try:
        destroy(ex)
    except Exception:  # pragma: no cover - the C call returns a status, it does not raise
        pass


class _ExecState:
    """C-side state of a repeatable executor; never references its wrapper (see Releaser)."""

    __slots__ = ("handle", "device", "destroy", "workspace", "keep", "uses", "name", "gen",
                 "closed")

    def __init__(self, handle, device, destroy, name):
        self.handle = handle
        self.closed = False     # set by close(); the handle itself may outlive it (stream order)
        self.device = device
        self.destroy = destroy
        self.workspace = None   # DeviceBuffer or None
        self.keep = None        # the arguments, alive as long as the executor
        self.uses = {}          # _StreamState -> seq of the last launch there
        self.name = name
        self.gen = _rt.gen


def _destroy_now(es):
    h = es.handle
    if h is None:
        return
    if es.gen == _rt.gen and _rt._state is _rt._INIT:
        _rt.activate(es.device)
        st = es.destroy(h)
        if st:
            raise make_error(st, "aclDestroyAclOpExecutor")
    es.handle = None
    es.keep = None
    ws, es.workspace = es.workspace, None
    if ws is not None:
        ws.close()


def _release_executor(es):
    """Releaser: destroys the executor once every stream it was launched on has run past its
    last launch (at once when none has pending work), then gives the workspace back."""
    es.closed = True
    if es.handle is None:
        return
    pending = [(s, seq) for s, seq in list(es.uses.items()) if s.done < seq and not s.closed]
    if not pending:
        _destroy_now(es)
        return
    remaining = [len(pending)]

    def _one_done(_arg):
        remaining[0] -= 1
        if remaining[0] == 0:
            try:
                _destroy_now(es)
            except Exception:
                _rt.Releaser(None, _destroy_now, (es,), _rt.ORDER_EXECUTOR)  # retried later
                raise
    for s, seq in pending:
        s.defer(seq, _one_done, None)


class Executor:
    """A repeatable ``aclOpExecutor`` with its workspace (made by :meth:`Operator.prepare`).

    ``run(stream=None)`` enqueues phase two; ``close()`` (or ``with``, garbage collection,
    teardown) destroys the executor and gives the workspace back, both after the streams it
    ran on have synchronized past its last run."""

    __slots__ = ("op", "workspace_size", "_es", "_rel", "_run", "_ws", "_bufs", "_device",
                 "_default", "_last", "_last_st", "__weakref__")

    def __init__(self, op, args, device, allocator=None):
        _rt.activate(device)
        cargs, bufs = op._handles(args)
        size, ex = op._phase_one(cargs)
        fns = op._fns
        st = fns[2](ex)
        if st:
            err = make_error(st, "aclSetAclOpExecutorRepeatable")
            _destroy_quietly(fns[3], ex)
            raise err
        es = _ExecState(ex, device, fns[3], op.name)
        es.keep = tuple(args)
        self._rel = _rt.Releaser(self, _release_executor, (es,), _rt.ORDER_EXECUTOR)
        self._es = es
        self.op = op
        self.workspace_size = size
        self._device = device
        if size:
            try:
                es.workspace = (allocator or default_allocator)(size, device)
            except BaseException:
                self._rel.release()
                raise
            self._ws = es.workspace.ptr
            bufs.append(es.workspace._bst)
        else:
            self._ws = _NULL
        self._bufs = tuple(bufs)
        # Stream-ordered release without per-run marking: every buffer of the executor counts
        # es.uses (one dict entry per stream, updated by run) as its own pending work.
        for b in self._bufs:
            b.link(es)
        self._run = fns[1]
        self._default = None
        # id() of the last run's stream argument (not the object: holding it would keep a
        # dropped Stream alive) and its state; a reused id is harmless: the state of a
        # collected Stream is closed, which sends run() to the checks.
        self._last = -1
        self._last_st = None

    @property
    def handle(self):
        """The ``aclOpExecutor *``."""
        es = self._es
        if es.closed or es.handle is None:
            raise self._closed_error()
        return es.handle

    @property
    def closed(self):
        return self._es.closed or self._es.handle is None

    def _closed_error(self):
        if self._es.gen != _rt.gen:
            return _rt.FinalizedError(f"{self.op.name} executor")
        return ClosedError(f"{self.op.name} executor is closed")

    def run(self, stream=None):
        """Phase two on ``stream`` (default: the device's default stream). Returns at once;
        results are valid once the stream has synchronized."""
        es = self._es
        # Hot path: the same stream argument as last time, still open, device current.
        if id(stream) == self._last and not es.closed and not self._last_st.closed and \
                _rt._tls.dev == self._device:
            sst = self._last_st
        else:
            sst = self._prepare_run(stream)
        st = self._run(self._ws, self.workspace_size, es.handle, sst.handle)
        if st:
            raise make_error(st, self.op.phase_two_name)
        # Recorded once per run, on the executor only: its buffers are linked to es.uses.
        seq = sst.seq = sst.seq + 1
        es.uses[sst] = seq

    def _prepare_run(self, stream):
        """The checks run() skips on its hot path; returns the stream state to launch on and
        remembers it for the next run."""
        es = self._es
        if es.closed or es.handle is None:
            raise self._closed_error()
        if stream is None:
            s = self._default
            if s is None or s._st.closed:
                s = self._default = _stream.as_stream(None, self._device)
            sst = s._st
        else:
            sst = _stream.as_stream(stream, self._device)._st
        if _rt._tls.dev != self._device:
            _rt.activate(self._device)
        self._last = id(stream)
        self._last_st = sst
        return sst

    __call__ = run

    def close(self):
        """Destroys the executor and releases the workspace (stream-ordered). Safe to
        repeat."""
        self._rel.release()

    def __enter__(self):
        if self.closed:
            raise self._closed_error()
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        state = "closed" if self.closed else f"workspace {self.workspace_size} bytes"
        return f"<acl_py.ops.Executor {self.op.name} {state}>"
