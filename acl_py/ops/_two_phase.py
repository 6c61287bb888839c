"""A thin wrapper of CANN's two-phase aclnn API, shared by every operator acl-py binds.

Every aclnn operator ``aclnnFoo`` is two C entry points::

    aclnnStatus aclnnFooGetWorkspaceSize(<args...>, uint64_t *workspaceSize,
                                         aclOpExecutor **executor);          // phase one
    aclnnStatus aclnnFoo(void *workspace, uint64_t workspaceSize,
                         aclOpExecutor *executor, aclrtStream stream);        // phase two

An :class:`Operator` describes one by its name and its argument list; it then does the rest:

* phase one, a failure raised as the typed error of its status (``acl_py.errors``) carrying
  the code and ``aclGetRecentErrMsg()``;
* the workspace, from the caller's allocator (by default a block of the device's memory pool
  kept with the launch's stream for its next launch, which runs after this one: stream
  order makes the reuse safe), taken only when phase one asks for more than 0 bytes;
* phase two on a stream;
* lifetimes. A single-use executor (:meth:`Operator.launch`) belongs to the library once phase
  two is called: the library releases it after running it, whether phase two succeeds or fails
  (hicann/opbase CommonOpExecutorRun), so acl-py destroys it only when phase two never ran (the
  workspace could not be had). A repeatable one
  (:meth:`Operator.prepare`, ``aclSetAclOpExecutorRepeatable`` right after phase one) runs any
  number of times and is destroyed (``aclDestroyAclOpExecutor``) by :meth:`Executor.close`,
  garbage collection or teardown; where the library refuses to make it repeatable (561000)
  the Executor launches phase one and two per run (``Executor.mode``). The workspace and
  every tensor buffer the launch touches are kept until the stream has synchronized past the
  launch (stream-ordered release, ``acl_py._ordering``), and so is a closed executor's
  destruction. A one-shot launch does not hold its argument objects: what is queued refers
  to device memory only (see :meth:`Operator.launch`).

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
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from .. import _ordering
from .. import device as _device
from .. import memory as _mem
from .. import runtime as _rt
from .. import stream as _stream
from .._ffi import ffi
from ..errors import AclArgumentError, AclTypeError, ClosedError, make_error
from ..arguments import ArgumentObject, TensorList, c_string
from ..tensor import DeviceTensor

if TYPE_CHECKING:
    from ..stream import Stream

_ExecutorSelf = TypeVar("_ExecutorSelf", bound="Executor")

__all__ = ["Param", "tensor", "int_array", "bool_array", "argument", "value", "string", "Operator",
           "Executor", "own_copy"]

TENSOR = "aclTensor"
INT_ARRAY = "aclIntArray"
BOOL_ARRAY = "aclBoolArray"
ARGUMENT = "argument"
VALUE = "value"
STRING = "string"

_NULL = ffi.NULL
_CData = ffi.CData
_REPEATABLE_REFUSED = 561000   # ACLNN_ERR_INNER: this executor cannot be made repeatable


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


def argument(name):
    """A pointer to any acl-py argument object: IntArray, BoolArray, FloatArray, Scalar,
    ScalarList or TensorList (whose tensors' memory the launch then counts as used)."""
    return Param(name, ARGUMENT)


def value(name):
    """A plain C value (``double``, ``int64_t``, ``bool``...) passed as given."""
    return Param(name, VALUE)


def string(name):
    """A ``const char *`` parameter given as a ``str`` (passed UTF-8 encoded, NUL-terminated)
    or ``bytes``; the library reads it during phase one only."""
    return Param(name, STRING)


def default_allocator(nbytes, device):
    """Workspace from the device's memory pool (reused across calls)."""
    return _mem.get_pool(device).malloc(nbytes)


class Operator:
    """An aclnn operator: ``name`` (the phase-two function), its parameters in phase-one order
    (without the trailing ``workspaceSize``/``executor`` out-parameters), and optionally the
    entry points' names when they do not follow the ``<name>GetWorkspaceSize`` / ``<name>``
    convention. The C functions are bound once, on first use, from acl-py's declarations;
    ``functions=(phase_one, phase_two)`` gives them instead (cffi function pointers, as
    ``acl_py.aclnn`` binds them from the operator headers at run time)."""

    __slots__ = ("name", "params", "phase_one_name", "phase_two_name", "_fns", "_kinds",
                 "_functions")

    def __init__(self, name, params, *, get_workspace_size=None, run=None, functions=None):
        self.name = name
        self.params = tuple(params)
        for p in self.params:
            if not isinstance(p, Param):
                raise TypeError(f"{name}: parameters must be Param objects, got {p!r}")
        self.phase_one_name = get_workspace_size or name + "GetWorkspaceSize"
        self.phase_two_name = run or name
        self._kinds = tuple(p.kind for p in self.params)
        self._functions = functions
        self._fns = None

    def _bind(self):
        fns = self._fns
        if fns is None:
            L = _rt.ensure()
            one, two = self._functions or (getattr(L, self.phase_one_name),
                                           getattr(L, self.phase_two_name))
            fns = self._fns = (one, two, L.aclSetAclOpExecutorRepeatable,
                               L.aclDestroyAclOpExecutor)
        return fns

    def argument_name(self, param):
        """The name :meth:`Executor.rebind` takes for ``param``: its C name."""
        return param.name

    def signature(self):
        return f"{self.phase_one_name}({', '.join(map(repr, self.params))}, " \
               f"uint64_t *workspaceSize, aclOpExecutor **executor)"

    def __repr__(self):
        return f"<acl_py.ops.Operator {self.name}>"

    # ---- argument conversion ----

    def c_arguments(self, args, device):
        """``(cargs, allocs)``: phase one's C values of ``args`` (in declaration order) and
        the Allocations the launch uses. Every tensor must be on ``device``."""
        kinds = self._kinds
        if len(args) != len(kinds):
            raise AclArgumentError("args", f"{self.name} takes {len(kinds)} arguments "
                                   f"({', '.join(p.name for p in self.params)}), got "
                                   f"{len(args)}")
        cargs = []
        allocs = []
        add = cargs.append
        for kind, a in zip(kinds, args):
            if kind is TENSOR:
                if type(a) is DeviceTensor or isinstance(a, DeviceTensor):
                    al = a.allocation
                    if al.device != device:
                        raise self._device_error(args, a, device)
                    h = a.cached_handle
                    if h is None or al.closed:
                        h = a.handle    # made now, or the error for a closed tensor
                    add(h)
                    allocs.append(al)
                elif a is None:
                    add(_NULL)
                elif isinstance(a, _CData):
                    add(a)
                else:
                    raise self._kind_error(args, a, "a DeviceTensor, None or a cffi "
                                           "aclTensor pointer")
            elif a is None:
                add(_NULL)
            elif kind is VALUE or isinstance(a, _CData):
                add(a)
            elif kind is STRING and isinstance(a, (str, bytes)):
                add(c_string(a, self.params[len(cargs)].name))   # NUL-terminated by cffi
            elif isinstance(a, ArgumentObject):
                add(a.handle)
                if kind is ARGUMENT and type(a) is TensorList:
                    for t in a.tensors:     # the launch uses their memory too
                        if t is not None:
                            if t.allocation.device != device:
                                raise self._device_error(args, a, device, t.allocation.device)
                            allocs.append(t.allocation)
            else:
                expected = {INT_ARRAY: "an acl_py IntArray", BOOL_ARRAY: "an acl_py BoolArray",
                            ARGUMENT: "an acl_py argument object",
                            STRING: "a str or bytes"}[kind]
                raise self._kind_error(args, a, f"{expected}, None or a cffi pointer")
        return cargs, allocs

    def _device_error(self, args, a, device, where=None):
        p = self.params[next(i for i, x in enumerate(args) if x is a)]
        where = a.allocation.device if where is None else where
        return AclArgumentError(p.name, f"{self.name}: tensor is on device {where}, the "
                                f"launch on device {device}")

    def _kind_error(self, args, a, expected):
        p = self.params[next(i for i, x in enumerate(args) if x is a)]
        return AclTypeError(p.name, f"{self.name}: expected {expected}, got "
                            f"{type(a).__name__}")

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
        workspace and the tensors' memory are kept until the stream has synchronized past
        the launch. The argument objects themselves are not: phase one reads the C handles
        and the single-use executor is gone when phase two returns (the library deletes it:
        hicann/opbase op_executor.cpp, CommonOpExecutorRun), so what is queued refers to
        device memory only, as torch_npu's calls do.

        Workspace: from ``allocator(nbytes, device)`` (a DeviceBuffer) when given, released
        after the launch; by default a block of the device's memory pool kept with the
        stream for its next launch, which reuses it at once (it runs after this one: stream
        order makes the reuse safe)."""
        sst = _stream.state_for(stream, device)     # also makes the device current
        cargs, allocs = self.c_arguments(args, device)
        self.enqueue(cargs, allocs, device, sst, allocator)

    def enqueue(self, cargs, allocs, device, sst, allocator=None):
        """:meth:`launch` on converted arguments: ``cargs`` the C values of phase one in
        order, ``allocs`` the Allocations the launch uses (each on ``device``), ``sst`` the
        StreamState to run on (``acl_py.stream.state_for``, which made ``device`` current).
        For operator front-ends that convert their arguments themselves (``acl_py.ops``)."""
        fns = self._fns or self._bind()
        outp = _tls.outp or _outparams()
        st = fns[0](*cargs, outp[0], outp[1])
        if st:
            raise make_error(st, self.phase_one_name)
        size = outp[0][0]
        ex = outp[1][0]
        if size and allocator is None:
            pool = _mem.default_pool_state(device)
            try:
                ptr, block = pool.workspace(size, sst)
            except BaseException:
                _destroy_quietly(fns[3], ex)
                raise
            try:
                st = sst.enqueue(fns[1], ptr, size, ex)
            except BaseException:
                _destroy_quietly(fns[3], ex)
                pool.park(ptr, block, sst, sst.seq)
                raise
            if st:
                err = make_error(st, self.phase_two_name)  # reads the message first
                # The library has released the executor, success or not (hicann/opbase
                # CommonOpExecutorRun; docs/emulator.md): not ours to destroy.
                pool.park(ptr, block, sst, sst.seq)
                raise err
            # Kept for the stream's next launch (it runs after this one); enqueue numbered
            # the launch (seq: its number, or a later one).
            pool.park(ptr, block, sst, sst.seq)
        elif size:
            self._launch_with(allocator, ex, size, sst, allocs, device)
            return
        else:
            try:
                st = sst.enqueue(fns[1], _NULL, 0, ex)
            except BaseException:
                _destroy_quietly(fns[3], ex)    # it never ran: the stream was closed
                raise
            if st:
                raise make_error(st, self.phase_two_name)   # the library released it
        # Each record is the stream's newest number, read in the store: another thread's
        # later launch using the same buffer may have recorded meanwhile (_ordering's
        # Timeline.submit says why a record must never go back).
        for a in allocs:
            a.uses[sst] = sst.seq

    def _launch_with(self, allocator, ex, size, sst, allocs, device):
        """Phase two with a workspace from the caller's ``allocator``."""
        fns = self._fns
        wsbuf = None
        try:
            wsbuf = allocator(size, device)
            ws = wsbuf.allocation
            st = sst.enqueue(fns[1], ws.ptr, size, ex)
        except BaseException:
            _destroy_quietly(fns[3], ex)
            if wsbuf is not None:
                wsbuf.close()
            raise
        if st:
            err = make_error(st, self.phase_two_name)
            wsbuf.close()   # the executor: released by the library (see launch)
            raise err
        ws.uses[sst] = sst.seq          # numbered by enqueue
        for a in allocs:
            a.uses[sst] = sst.seq       # the newest number: see enqueue
        wsbuf.close()   # freed once the stream is past this launch

    # ---- repeatable executor ----

    def prepare(self, args, *, device, allocator=None):
        """Phase one with a repeatable executor and its workspace: an :class:`Executor`
        whose ``run(stream)`` is phase two. It keeps its own descriptors of the tensors (and
        its own tensor lists) and the other arguments, and the tensors' memory until it is
        closed, even if the caller closes them meanwhile (the library reads them at every
        run). Where the
        library cannot make the executor repeatable (``aclSetAclOpExecutorRepeatable``
        returns 561000), the Executor runs phase one and two at every run instead
        (``Executor.mode == "per-run"``)."""
        return Executor(self, *self.own_arguments(args, device), device, allocator)

    def own_arguments(self, args, device):
        """``(cargs, allocs, keep)`` for an :class:`Executor`: ``keep`` its own copies of
        ``args`` (:func:`own_copy`), ``cargs`` and ``allocs`` theirs (:meth:`c_arguments`)."""
        keep = tuple(map(own_copy, args))
        return (*self.c_arguments(keep, device), keep)


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


def _destroy_quietly(destroy, ex):
    # Cleanup on an error path: the error being raised matters more than this one.
    try:
        destroy(ex)
    except Exception:  # pragma: no cover - the C call returns a status, it does not raise
        pass


class _ExecState:
    """C-side state of a repeatable executor; never references its wrapper (see Releaser)."""

    __slots__ = ("handle", "device", "destroy", "workspace", "keep", "uses", "life", "gen",
                 "closed")

    def __init__(self, handle, device, destroy):
        self.handle = handle
        self.closed = False     # set by close(); the handle itself may outlive it (stream order)
        self.device = device
        self.destroy = destroy
        self.workspace = None   # DeviceBuffer or None
        self.keep = None        # its own copies of the arguments (own_copy), alive as long as it
        # Its runs, and its life until close(): the buffers it holds link to this record, so
        # a buffer closed meanwhile is freed after the executor's close and its last run.
        self.life = _ordering.Lifetime()
        self.uses = _ordering.Uses()
        self.uses[self.life] = 1
        self.gen = _rt.gen


def _destroy_now(es):
    h = es.handle
    if h is None:
        return
    if es.gen == _rt.gen and _rt.ready:
        # Its device current for the destroy, then the thread's again (a garbage collection
        # may run this inside another operation of the thread, on another device).
        with _device.restoring(es.device):
            st = es.destroy(h)
        if st:
            raise make_error(st, "aclDestroyAclOpExecutor")
    es.handle = None
    es.keep = None
    ws, es.workspace = es.workspace, None
    if ws is not None:
        ws.close()


def _release_executor(es):
    """Releaser: ends the executor's life (the buffers closed meanwhile are then freed after
    its last run), and destroys it once every stream it was launched on has run past that
    run (at once when none has pending work), then gives the workspace back."""
    es.closed = True
    errs = es.life.end()
    if es.handle is not None:
        _ordering.release_after(es.uses, _destroy_now, es, _rt.ORDER_EXECUTOR)
    if errs:
        raise errs[0]


def own_copy(arg):
    """What an executor keeps of one argument: its own descriptor of a tensor (a view of the
    same memory, destroyed after the executor) and its own tensor list, for the library reads
    them at every run (the vendor's aclSetTensorAddr: between runs, the address recorded in
    the caller's aclTensor is what changes). So the caller closing the argument closes the
    caller's descriptor only; its memory waits for the executor (see _ExecState.uses)."""
    if type(arg) is DeviceTensor or isinstance(arg, DeviceTensor):
        return arg[...]
    if type(arg) is TensorList:
        return TensorList(arg.tensors)
    return arg


def _by_parameter(op, cargs, keep):
    """Per parameter of ``op``, the executor's own object phase one was given there (found
    in ``keep`` by its C value): its own DeviceTensor or TensorList, else None."""
    own = {}
    for k in keep:
        if type(k) is DeviceTensor or isinstance(k, DeviceTensor):
            if k.cached_handle is not None:
                own[k.cached_handle] = k
        elif type(k) is TensorList:
            own[k.handle] = k
    return tuple(own.get(c) if p.kind is TENSOR or p.kind is ARGUMENT else None
                 for p, c in zip(op.params, cargs))


class Executor:
    """A repeatable ``aclOpExecutor`` with its workspace (made by :meth:`Operator.prepare`),
    over converted arguments: ``cargs`` phase one's C values, ``allocs`` the memory they use
    and ``keep`` what they live in (the executor's own copies: :meth:`Operator.own_arguments`),
    held until the executor is closed.

    ``run(stream=None)`` enqueues phase two and returns ``outputs`` (None unless a subclass
    or the caller set it, e.g. an operator's plan); ``close()`` (or ``with``, garbage
    collection, teardown) destroys the executor and gives the workspace back, both after the
    streams it ran on have synchronized past its last run.

    ``mode`` is ``"repeatable"``, or ``"per-run"`` when the library refused to make this
    executor repeatable (``aclSetAclOpExecutorRepeatable`` returned 561000, which the
    vendor's library does for some executors): each run is then a whole one-shot launch
    (:meth:`Operator.enqueue`: phase one, a workspace, phase two) on the same C values,
    which stay valid, as in a repeatable executor, until it is closed."""

    __slots__ = ("op", "workspace_size", "outputs", "_es", "_rel", "_per_run", "_allocator",
                 "_device", "_phase_two", "_ws_ptr", "_bound", "__weakref__")

    def __init__(self, op, cargs, allocs, keep, device, allocator=None):
        _device.activate(device)
        made_in = _rt.gen   # before phase one: see Releaser
        size, ex = op._phase_one(cargs)
        fns = op._fns
        es = self._es = _ExecState(ex, device, fns[3])
        es.keep = keep
        self._rel = _rt.Releaser(self, _release_executor, (es,), _rt.ORDER_EXECUTOR, made_in)
        self.op = op
        self.workspace_size = size
        self.outputs = None
        self._device = device
        self._per_run = None
        self._allocator = allocator
        self._phase_two = fns[1]
        self._ws_ptr = _NULL
        self._bound = _by_parameter(op, cargs, keep)
        st = fns[2](ex)
        if st:
            err = make_error(st, "aclSetAclOpExecutorRepeatable")
            if st != _REPEATABLE_REFUSED:
                self._rel.release()
                raise err
            # The executor stays single-use (the vendor's SetRepeatable leaves it as phase
            # one made it): destroy it now, it never ran, and launch per run instead, on the
            # same C values (kept here with what they live in: the destroy drops es.keep). A
            # failed destroy is retried by close(), garbage collection or teardown.
            self._per_run = (cargs, allocs, keep)
            try:
                _destroy_now(es)
            except Exception:
                pass
        elif size:
            try:
                es.workspace = (allocator or default_allocator)(size, device)
            except BaseException:
                self._rel.release()
                raise
            ws = es.workspace.allocation
            self._ws_ptr = ws.ptr   # fixed for the executor's life
            ws.uses.link(es.uses)
        # Stream-ordered release without marking every buffer at every run: each buffer
        # counts the executor's record (its life until close, then one entry per stream,
        # updated by run) as its own. Per run too: a buffer the caller closes meanwhile
        # waits for the executor's close, so the C values stay valid until then.
        for a in allocs:
            a.uses.link(es.uses)

    @property
    def mode(self) -> str:
        """``"repeatable"`` (phase two per run) or ``"per-run"`` (phase one and two per run:
        the library refused to make the executor repeatable)."""
        return "repeatable" if self._per_run is None else "per-run"

    @property
    def handle(self) -> Any:
        """The ``aclOpExecutor *`` (None in ``per-run`` mode: each run makes its own)."""
        es = self._es
        if es.closed:
            raise self._closed_error()
        return es.handle

    @property
    def closed(self) -> bool:
        es = self._es
        return es.closed or (es.handle is None and self._per_run is None)

    def _closed_error(self):
        if self._es.gen != _rt.gen:
            return _rt.FinalizedError(f"{self.op.name} executor")
        return ClosedError(f"{self.op.name} executor is closed")

    def run(self, stream: Stream | None = None) -> Any:
        """Phase two on ``stream`` (default: the device's default stream). Returns
        ``outputs`` (a plan's tuple of DeviceTensors, None where not requested) at once;
        results are valid once the stream has synchronized. Runs on different streams share
        the workspace and the outputs: order them (a synchronize or an event), as any work
        on the same memory."""
        es = self._es
        h = es.handle
        if h is None or es.closed:
            return self._run_per_launch(stream)
        dev = self._device
        sst = _stream.state_for(stream, dev)        # also makes the device current
        st = sst.enqueue(self._phase_two, self._ws_ptr, self.workspace_size, h)
        if st:
            raise make_error(st, self.op.phase_two_name)
        # Recorded once per run, on the executor only: its buffers are linked to es.uses.
        es.uses[sst] = sst.seq      # numbered by enqueue
        return self.outputs

    def rebind(self, /, **tensors: DeviceTensor) -> None:
        """Runs the executor on other tensors from its next run on, without a new phase one:
        each keyword names a tensor parameter (as :meth:`Operator.argument_name` does: the C
        name here, the Python one for a plan) and gives a :class:`~acl_py.DeviceTensor` of the
        tensor it replaces' dtype, shape, strides and offset, on the executor's device.
        ``aclSetTensorAddr`` re-points the executor's own descriptor of that parameter at the
        new memory (in ``per-run`` mode the next phase one is simply given the new tensor).

        Memory: the new tensor's is kept until the executor is closed and its last run done,
        as the first one's was; the replaced one's only until the stream has passed the runs
        already queued on it. Queued runs keep the memory they were launched on: rebind
        between runs as you would change the inputs' contents (order runs on other streams
        first). Wrong arguments raise before anything changes (AclTypeError for an unknown
        name, a dtype or a kind, AclArgumentError for the rest, ClosedError for a closed
        tensor, each naming the argument); a refusal of the library raises its typed error,
        the arguments before it rebound."""
        if self.closed or self._es.gen != _rt.gen:
            raise self._closed_error()
        op = self.op
        bound = self._bound
        names = [op.argument_name(p) for p in op.params]
        checked = []
        for name, t in tensors.items():
            if name not in names:
                tensor_names = [n for n, p in zip(names, op.params) if p.kind is TENSOR]
                raise AclTypeError(name, f"{op.name} has no parameter of that name (its "
                                   f"tensors: {', '.join(tensor_names)})")
            pos = names.index(name)
            if op.params[pos].kind is not TENSOR:
                raise AclArgumentError(name, f"{op.name}: only tensor parameters can be "
                                       f"rebound (not a value, an array or a tensor list): "
                                       f"prepare a new executor")
            checked.append((pos, name, self._rebinding(name, bound[pos], t)))
        for pos, name, t in checked:
            if t is None:
                continue    # accepted with nothing to re-point (see _rebinding)
            if self._per_run is None:
                self._repoint(pos, t)
            else:
                self._replace(pos, t)
            self._rebound(name, t)

    def _rebinding(self, name, own, t):
        """``t`` checked against the executor's tensor ``own`` for parameter ``name``; or None
        where ``t`` is accepted but nothing is re-pointed (a plan's output the part does not
        write: :meth:`acl_py.ops.Plan._rebinding`)."""
        if not isinstance(own, DeviceTensor):
            raise AclArgumentError(name, f"{self.op.name}: was None (or a raw pointer) when the "
                                   f"executor was prepared: there is no tensor to replace")
        if not isinstance(t, DeviceTensor):
            raise AclTypeError(name, f"expected an acl_py.DeviceTensor, got "
                               f"{type(t).__name__}")
        if t.closed:
            raise ClosedError(f"{name}: DeviceTensor is closed")
        if t.allocation.device != self._device:
            raise AclArgumentError(name, f"tensor is on device {t.allocation.device}, the "
                                   f"executor on device {self._device}")
        if t.dtype != own.dtype:
            raise AclTypeError(name, f"dtype {t.dtype} != {own.dtype}, the dtype the executor "
                               f"was prepared for")
        if t.shape != own.shape:
            raise AclArgumentError(name, f"shape {t.shape} != {own.shape}, the shape the "
                                   f"executor was prepared for")
        if t.strides != own.strides or t.offset != own.offset:
            raise AclArgumentError(name, f"layout (strides {t.strides}, offset {t.offset}, in "
                                   f"elements) != (strides {own.strides}, offset {own.offset}), "
                                   f"the layout the executor was prepared for")
        return t

    def _flat_index(self, pos):
        """aclSetTensorAddr's index of parameter ``pos``: the tensors before it in phase
        one's order (a tensor list counts its tensors; a None tensor keeps its place)."""
        n = 0
        for p, own in zip(self.op.params[:pos], self._bound):
            if p.kind is TENSOR:
                n += 1
            elif type(own) is TensorList:
                n += len(own.tensors)
        return n

    def _repoint(self, pos, t):
        """Re-points the repeatable executor's own descriptor of parameter ``pos`` at ``t``'s
        memory, and moves the memory's bookkeeping (see rebind)."""
        es = self._es
        own = self._bound[pos]
        L = _rt.lib if _rt.ready else _rt.ensure()
        new = t.allocation
        # The descriptor phase one was given (cached_handle: its first buffer may be closed).
        st = L.aclSetTensorAddr(es.handle, self._flat_index(pos), own.cached_handle, new.ptr)
        if st:
            raise make_error(st, "aclSetTensorAddr")
        old = own.allocation
        own.repoint(t)
        new.uses.link(es.uses)
        old.uses.unlink(es.uses)

    def _replace(self, pos, t):
        """``per-run`` mode: the next phase one is given the executor's own copy of ``t``."""
        cargs, allocs, keep = self._per_run
        es = self._es
        old = self._bound[pos]
        own = own_copy(t)
        cargs = list(cargs)
        cargs[pos] = own.handle
        allocs = list(allocs)
        allocs[next(i for i, a in enumerate(allocs) if a is old.allocation)] = own.allocation
        self._per_run = (cargs, allocs, [own if k is old else k for k in keep])
        self._bound = self._bound[:pos] + (own,) + self._bound[pos + 1:]
        t.allocation.uses.link(es.uses)
        old.allocation.uses.unlink(es.uses)
        old.close()     # its aclTensor: the runs queued on it hold device addresses only

    def _rebound(self, name, t):
        """After parameter ``name`` was rebound to ``t`` (a plan updates its outputs)."""

    def _run_per_launch(self, stream):
        es = self._es
        if es.closed or self._per_run is None or es.gen != _rt.gen:
            raise self._closed_error()
        cargs, allocs, _ = self._per_run
        dev = self._device
        self.op.enqueue(cargs, allocs, dev, _stream.state_for(stream, dev), self._allocator)
        return self.outputs

    __call__ = run

    def close(self) -> None:
        """Destroys the executor and releases the workspace (stream-ordered). Safe to
        repeat."""
        self._rel.release()
        self._per_run = None
        self._bound = ()
        self._es.closed = True

    def __enter__(self: _ExecutorSelf) -> _ExecutorSelf:
        if self.closed:
            raise self._closed_error()
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        self.close()
        return False

    def __repr__(self):
        state = "closed" if self.closed else f"workspace {self.workspace_size} bytes"
        return f"<acl_py.ops.Executor {self.op.name} {state}>"
