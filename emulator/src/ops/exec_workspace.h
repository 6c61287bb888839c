/*
 * The workspace size a device's phase one reports: the executor's, computed as CANN's opbase
 * computes it (hicann/opbase src/nnopbase/composite_op/aclnn_engine/op_executor.cpp
 * aclOpExecutor::GetWorkspaceSize). The op_api's L0 calls build a kernel graph; every tensor of
 * it that lives in the workspace is placed by op::mem::MaxAllocator
 * (composite_op/mem_mgr/memory_allocator.cpp): the kernels' own workspaces (each tiling's
 * GetWorkspaceSizes entries become executor-allocated UINT8 tensors, aclnn_engine/
 * kernel_workspace.cpp UpdateWorkspace; alive during their kernel only) and the L0 outputs
 * still allocated by the executor (AllocTensor: a Contiguous copy, a Cast, a Fill, an output
 * nobody copies out; alive from their kernel to their last reader's, common/utils/
 * kernel_graph.cpp CalcLifeTimeAndSize). A kernel output that l0op::ViewCopy hands to a
 * contiguous user tensor is re-pointed there (ops-math conversion/contiguous/op_host/op_api/
 * contiguous.cpp ViewCopy) and takes no workspace; from then on it is a caller's tensor, which
 * a second ViewCopy into another contiguous one copies by l0op::TensorMove (ew_copy_out).
 *
 * An operator declares its graph in launch order (each kernel's workspaces, then its
 * outputs) and reads ew_size. Nothing here touches memory: the size is a number.
 */
#ifndef ACLEMU_OPS_EXEC_WORKSPACE_H_
#define ACLEMU_OPS_EXEC_WORKSPACE_H_

#include <stdbool.h>
#include <stdint.h>

#include "emu_internal.h"

/* Each kernel's system workspace, as the vendor's tilings hard-code it (16 * 1024 * 1024 in
 * layer_norm_grad_v3_*_tiling.cpp, layer_norm_v4_welford_tiling.cpp, ...). */
#define EW_SYS_WORKSPACE ((uint64_t)16 * 1024 * 1024)

/* The system workspace of a tiling that asks the platform instead (platform_ascendc's
 * GetLibApiWorkSpaceSize, through opbase op_host/util/platform_util.h GetWorkspaceSize or
 * directly): by NPU architecture, 16 MiB on DAV_2201 (Atlas A2/A3) and DAV_3510 (Ascend 950),
 * 2 MiB on any other (asc-devkit impl/utils/tiling/platform/platform_ascendc.cpp). */
static inline uint64_t ew_lib_api_workspace(const aclemu_soc *soc)
{
    return soc->npu_arch == 2201 || soc->npu_arch == 3510 ? EW_SYS_WORKSPACE
                                                          : (uint64_t)2 * 1024 * 1024;
}

/* aclnnBatchNormElemtBackward's graph holds up to 40 (every input strided, a FLOAT16 compute
 * dtype and Ascend 950's workspaces) */
#define EW_MAX_TENSORS 64

typedef struct {
    uint64_t bytes;
    int start, end; /* its kernel's index, its last reader's */
    bool user;      /* re-pointed to a user tensor by ViewCopy: no workspace */
} ew_tensor;

typedef struct {
    int arch; /* the part's NPU architecture: which helper kernels have a tiling workspace */
    int kernels;
    int n;
    bool overflow; /* a tensor past EW_MAX_TENSORS was dropped (see ew_size) */
    ew_tensor t[EW_MAX_TENSORS];
} ew_graph;

/* An empty graph on a part of NPU architecture `arch`. */
static inline ew_graph ew_graph_on(int arch)
{
    return (ew_graph){.arch = arch};
}

/* memory_allocator.h: every tensor takes its size plus 32 bytes, rounded up to 512. */
static inline uint64_t ew_align(uint64_t bytes)
{
    return (bytes + 32 + 511) & ~(uint64_t)511;
}

/* A new kernel, launched after every one declared before; its index. */
static inline int ew_kernel(ew_graph *g)
{
    return g->kernels++;
}

/* One of kernel k's tiling workspaces (alive during k only). */
static inline void ew_kernel_workspace(ew_graph *g, int k, uint64_t bytes)
{
    if (g->n < EW_MAX_TENSORS)
        g->t[g->n++] = (ew_tensor){bytes, k, k, false};
    else
        g->overflow = true;
}

/* An executor-allocated output of kernel k; its handle for ew_read (-1: none). */
static inline int ew_output(ew_graph *g, int k, uint64_t bytes)
{
    if (g->n >= EW_MAX_TENSORS) {
        g->overflow = true;
        return -1;
    }
    g->t[g->n] = (ew_tensor){bytes, k, k, false};
    return g->n++;
}

/* Kernel k reads intermediate `out` (a handle of ew_output; -1: a user tensor, no effect). */
static inline void ew_read(ew_graph *g, int out, int k)
{
    if (out >= 0 && k > g->t[out].end)
        g->t[out].end = k;
}

/* Kernel k reads each of the n intermediates in[] (handles or -1). */
static inline void ew_read_all(ew_graph *g, const int *in, int n, int k)
{
    for (int i = 0; i < n; i++)
        ew_read(g, in[i], k);
}

/* A new kernel reading the n intermediates in[] (handles or -1); its index. */
static inline int ew_kernel_reading(ew_graph *g, const int *in, int n)
{
    const int k = ew_kernel(g);
    ew_read_all(g, in, n, k);
    return k;
}

/* MaxAllocator::Allocate: each tensor, in declaration order, joins the last bucket whose most
 * recent tensor's lifetime it does not overlap (two tensors of one kernel always overlap,
 * TensorBucket::IsReusable and KernelTensor::IsLifeTimeNotOverLap; the "input of" test is
 * implied by the overlap here, since a reader runs after the writer), else a new bucket; a
 * bucket is as large as its largest aligned tensor; the executor's size is the buckets' sum
 * (no AI CPU kernel here: workspaceDeviceAicpuMem_ is 0). A graph that outgrew EW_MAX_TENSORS
 * lost tensors, so any sum would be short: UINT64_MAX instead, which no caller can allocate
 * and every workspace-size test sees (raise the cap for such an operator). */
static inline uint64_t ew_size(const ew_graph *g)
{
    if (g->overflow)
        return UINT64_MAX;
    uint64_t size[EW_MAX_TENSORS];
    int back[EW_MAX_TENSORS], nb = 0;
    for (int i = 0; i < g->n; i++) {
        const ew_tensor *t = &g->t[i];
        if (t->user)
            continue;
        int fit = -1;
        for (int b = 0; b < nb; b++) {
            const ew_tensor *r = &g->t[back[b]];
            bool apart = r->start != t->start &&
                         (t->start > r->start ? r->end < t->start : t->end < r->start);
            if (apart)
                fit = b;
        }
        if (fit < 0) {
            fit = nb++;
            size[fit] = 0;
        }
        const uint64_t a = ew_align(t->bytes);
        if (a > size[fit])
            size[fit] = a;
        back[fit] = i;
    }
    uint64_t total = 0;
    for (int b = 0; b < nb; b++)
        total += size[b];
    return total;
}

/* opbase composite_op/utils/tensor_view_utils.cpp IsContiguous: an empty or one-element view,
 * else row-major strides over the dims other than 1. */
static inline bool ew_contiguous(const aclTensor *t)
{
    int64_t want = 1, n = 1;
    for (uint64_t i = 0; i < t->ndim; i++)
        n *= t->dims[i];
    if (n <= 1)
        return true;
    for (uint64_t i = t->ndim; i-- > 0;) {
        if (t->dims[i] == 1)
            continue;
        if (t->strides[i] != want)
            return false;
        want *= t->dims[i];
    }
    return true;
}

static inline uint64_t ew_elems(const aclTensor *t)
{
    uint64_t n = 1;
    for (uint64_t i = 0; i < t->ndim; i++)
        n *= (uint64_t)t->dims[i];
    return n;
}

static inline uint64_t ew_bytes(const aclTensor *t, aclDataType dt)
{
    return ew_elems(t) * aclemu_dtype_size(dt);
}

/* A compute kernel reading intermediates a and b (handles or -1) with one tiling workspace of
 * `ws` bytes (0: none, as a TBE kernel whose compile-info workspace is not public), whose
 * output of `bytes` the executor allocates (Mul, Div, ReduceSum, BroadcastTo, ...); its handle. */
static inline int ew_op(ew_graph *g, int a, int b, uint64_t ws, uint64_t bytes)
{
    const int k = ew_kernel(g);
    ew_read(g, a, k);
    ew_read(g, b, k);
    if (ws)
        ew_kernel_workspace(g, k, ws);
    return ew_output(g, k, bytes);
}

/* The helper kernels' own tiling workspaces. Only Ascend 950 (DAV_3510) has public tilings for
 * them (ops-math's op_host/arch35 directories); on the other parts they are TBE kernels whose
 * workspaces come from compile info that is not public: counted as none. On 3510: Cast 16 MiB
 * (math/cast/op_host/arch35/cast_tiling.cpp MINIMAL_WORKSPACE), Fill 16 MiB (conversion/fill/
 * op_host/arch35/fill_tiling_arch35.cpp), OnesLike 16 MiB (math/ones_like/op_host/arch35/
 * ones_like_tiling_arch35.cpp), ZerosLike 0 bytes (math/zero_op/op_host/arch35/
 * zeros_like_tiling_arch35.cpp), which the executor still allocates as a {0}-shaped tensor
 * (aclnn_engine/kernel_workspace.cpp UpdateWorkspace) that the allocator rounds to 512. */
static inline void ew_helper_workspace(ew_graph *g, int k, uint64_t bytes_on_3510)
{
    if (g->arch == 3510)
        ew_kernel_workspace(g, k, bytes_on_3510);
}

/* Whether Ascend 950 runs Cast from -> to on AI Core (cast.cpp IsAiCoreSupport, its regbase
 * pair list; the rest go to AI CPU, whose memory is not modelled): per source dtype, the
 * destinations as bits of their aclDataType values. */
#define EW_B(d) ((uint64_t)1 << ACL_##d)
static inline bool ew_cast_on_aicore_3510(aclDataType from, aclDataType to)
{
    static const uint64_t to_mask[ACL_FLOAT4_E1M2 + 1] = {
        [ACL_FLOAT] = EW_B(FLOAT16) | EW_B(INT32) | EW_B(INT64) | EW_B(BF16) | EW_B(BOOL) |
                      EW_B(UINT8) | EW_B(INT8) | EW_B(INT16) | EW_B(COMPLEX64) |
                      EW_B(HIFLOAT8) | EW_B(FLOAT8_E5M2) | EW_B(FLOAT8_E4M3FN) |
                      EW_B(FLOAT4_E2M1) | EW_B(FLOAT4_E1M2),
        [ACL_FLOAT16] = EW_B(FLOAT) | EW_B(INT32) | EW_B(INT64) | EW_B(BF16) | EW_B(BOOL) |
                        EW_B(UINT8) | EW_B(INT8) | EW_B(INT16) | EW_B(COMPLEX32) |
                        EW_B(HIFLOAT8) | EW_B(FLOAT8_E5M2) | EW_B(FLOAT8_E4M3FN) |
                        EW_B(FLOAT4_E2M1) | EW_B(FLOAT4_E1M2),
        [ACL_BF16] = EW_B(FLOAT) | EW_B(FLOAT16) | EW_B(INT32) | EW_B(INT64) | EW_B(BOOL) |
                     EW_B(UINT8) | EW_B(INT8) | EW_B(INT16) | EW_B(COMPLEX64) | EW_B(HIFLOAT8) |
                     EW_B(FLOAT8_E5M2) | EW_B(FLOAT8_E4M3FN) | EW_B(FLOAT4_E2M1) |
                     EW_B(FLOAT4_E1M2),
        [ACL_INT8] = EW_B(FLOAT) | EW_B(FLOAT16) | EW_B(BF16) | EW_B(INT32) | EW_B(INT64) |
                     EW_B(INT16) | EW_B(UINT8) | EW_B(UINT16) | EW_B(UINT32) | EW_B(BOOL),
        [ACL_UINT8] = EW_B(FLOAT) | EW_B(FLOAT16) | EW_B(BF16) | EW_B(INT32) | EW_B(INT64) |
                      EW_B(INT16) | EW_B(INT8) | EW_B(UINT16) | EW_B(UINT32) | EW_B(BOOL),
        [ACL_INT16] = EW_B(FLOAT) | EW_B(FLOAT16) | EW_B(BF16) | EW_B(INT32) | EW_B(INT64) |
                      EW_B(INT8) | EW_B(UINT8) | EW_B(UINT16) | EW_B(UINT32) | EW_B(BOOL),
        [ACL_UINT16] = EW_B(FLOAT) | EW_B(FLOAT16) | EW_B(BF16) | EW_B(INT32) | EW_B(INT64) |
                       EW_B(INT16) | EW_B(INT8) | EW_B(UINT8) | EW_B(UINT32) | EW_B(BOOL),
        [ACL_UINT32] = EW_B(FLOAT) | EW_B(FLOAT16) | EW_B(BF16) | EW_B(INT32) | EW_B(INT64) |
                       EW_B(INT16) | EW_B(INT8) | EW_B(UINT8) | EW_B(UINT16) | EW_B(BOOL),
        [ACL_INT32] = EW_B(FLOAT) | EW_B(FLOAT16) | EW_B(BF16) | EW_B(INT64) | EW_B(INT16) |
                      EW_B(INT8) | EW_B(UINT8) | EW_B(UINT16) | EW_B(UINT32) | EW_B(BOOL) |
                      EW_B(INT4),
        [ACL_INT64] = EW_B(FLOAT) | EW_B(FLOAT16) | EW_B(BF16) | EW_B(INT32) | EW_B(INT16) |
                      EW_B(INT8) | EW_B(UINT8) | EW_B(UINT16) | EW_B(UINT32) | EW_B(BOOL) |
                      EW_B(DOUBLE),
        [ACL_BOOL] = EW_B(FLOAT) | EW_B(FLOAT16) | EW_B(BF16) | EW_B(INT32) | EW_B(INT64) |
                     EW_B(INT16) | EW_B(INT8) | EW_B(UINT8),
        [ACL_DOUBLE] = EW_B(FLOAT) | EW_B(BF16) | EW_B(INT32) | EW_B(INT64),
        [ACL_COMPLEX64] = EW_B(FLOAT) | EW_B(BF16) | EW_B(COMPLEX32),
        [ACL_COMPLEX32] = EW_B(FLOAT16) | EW_B(COMPLEX64),
        [ACL_UINT1] = EW_B(FLOAT16),
        [ACL_HIFLOAT8] = EW_B(FLOAT) | EW_B(FLOAT16) | EW_B(BF16) | EW_B(FLOAT4_E2M1) |
                         EW_B(FLOAT4_E1M2),
        [ACL_FLOAT8_E5M2] = EW_B(FLOAT) | EW_B(FLOAT16) | EW_B(BF16) | EW_B(FLOAT4_E2M1) |
                            EW_B(FLOAT4_E1M2),
        [ACL_FLOAT8_E4M3FN] = EW_B(FLOAT) | EW_B(FLOAT16) | EW_B(BF16) | EW_B(FLOAT4_E2M1) |
                              EW_B(FLOAT4_E1M2),
        [ACL_FLOAT4_E2M1] = EW_B(FLOAT) | EW_B(FLOAT16) | EW_B(BF16) | EW_B(HIFLOAT8) |
                            EW_B(FLOAT8_E5M2) | EW_B(FLOAT8_E4M3FN),
        [ACL_FLOAT4_E1M2] = EW_B(FLOAT) | EW_B(FLOAT16) | EW_B(BF16) | EW_B(HIFLOAT8) |
                            EW_B(FLOAT8_E5M2) | EW_B(FLOAT8_E4M3FN),
    };
    return from >= 0 && from <= ACL_FLOAT4_E1M2 && to >= 0 && to < 64 &&
           (to_mask[from] >> to & 1);
}
#undef EW_B

/* l0op::Cast of intermediate `in` (handle or -1) of dtype from to dtype to, n elements: no
 * kernel when equal (ops-math math/cast/op_api/cast.cpp); else a kernel reading `in` whose
 * output the executor allocates, with on Ascend 950 its tiling's 16 MiB when on AI Core.
 * Returns the result's handle (in itself when no kernel). */
static inline int ew_cast(ew_graph *g, int in, aclDataType from, aclDataType to, uint64_t n)
{
    if (from == to)
        return in;
    const int k = ew_kernel(g);
    ew_read(g, in, k);
    if (ew_cast_on_aicore_3510(from, to))
        ew_helper_workspace(g, k, EW_SYS_WORKSPACE);
    return ew_output(g, k, n * aclemu_dtype_size(to));
}

/* ---- The copy kernels (ops-math conversion/contiguous/op_host/op_api/contiguous.cpp) ---------
 * l0op::Contiguous turns a strided view into a contiguous tensor by a chain of Slice or
 * StridedSlice, then Transpose, then BroadcastTo (each step only where the view needs it), or
 * else one AsStrided; l0op::ViewCopy writes a contiguous result into a strided output by one
 * Transpose or one ViewCopy. Each step's result is an executor-allocated tensor read by the
 * next step. On Ascend 950 each of these kernels on AI Core has an arch35 tiling asking for its
 * own workspace (below); off Ascend 950 they are TBE kernels (compile-info workspaces, not
 * public: none), and a dtype outside a kernel's AI Core list runs on AI CPU (none either). */

/* A view's dims of non-zero stride and size other than 1, in order, as (stride, rank among
 * them, size); whether a stride is 0 (broadcast) or rises (transpose): BuildValidStrideIndexPairs
 * (any 0 stride counts, even on a dim of size 1). */
typedef struct {
    int64_t stride, idx, dim;
} ew_axis;

typedef struct {
    int n;
    bool broadcast, transpose;
    ew_axis a[ACLEMU_MAX_DIMS + 1];
} ew_axes;

static inline ew_axes ew_view_axes(const aclTensor *t)
{
    ew_axes v = {0};
    int64_t last = INT64_MAX;
    for (uint64_t i = 0; i < t->ndim; i++) {
        if (t->strides[i] == 0) {
            v.broadcast = true;
            continue;
        }
        if (t->dims[i] == 1)
            continue;
        if (last < t->strides[i])
            v.transpose = true;
        last = t->strides[i];
        v.a[v.n] = (ew_axis){t->strides[i], v.n, t->dims[i]};
        v.n++;
    }
    return v;
}

/* contiguous.cpp's IsContiguous of the pairs: row-major strides over them. */
static inline bool ew_axes_contiguous(const ew_axes *v)
{
    int64_t want = 1;
    for (int i = v->n; i-- > 0;) {
        if (v->a[i].stride != want)
            return false;
        want *= v->a[i].dim;
    }
    return true;
}

/* std::sort over reverse iterators: descending by (stride, rank, size). */
static inline void ew_axes_sort(ew_axes *v)
{
    for (int i = 1; i < v->n; i++) {
        const ew_axis x = v->a[i];
        int j = i;
        while (j > 0 && (v->a[j - 1].stride < x.stride ||
                         (v->a[j - 1].stride == x.stride && v->a[j - 1].idx < x.idx)))
            v->a[j] = v->a[j - 1], j--;
        v->a[j] = x;
    }
}

/* CanOptimizeAsStridedContiguous: three (shape, strides) pairs the vendor sends to AsStrided
 * for speed. */
static inline bool ew_as_strided_listed(const ew_axes *v)
{
    static const int64_t list[3][2][6] = {
        {{4, 288, 2, 2, 240, 240}, {67046400, 230400, 480, 1, 960, 2}},
        {{4, 512, 2, 2, 120, 120}, {33177600, 57600, 240, 1, 480, 2}},
        {{4, 10, 32, 128}, {122880, 128, 3840, 1}},
    };
    static const int rank[3] = {6, 6, 4};
    for (int l = 0; l < 3; l++) {
        bool same = v->n == rank[l];
        for (int i = 0; same && i < v->n; i++)
            same = v->a[i].dim == list[l][0][i] && v->a[i].stride == list[l][1][i];
        if (same)
            return true;
    }
    return false;
}

typedef struct {
    bool as_strided, slice, strided_slice, transpose, broadcast;
} ew_chain;

static inline int64_t ew_gcd(int64_t a, int64_t b)
{
    while (b) {
        const int64_t r = a % b;
        a = b, b = r;
    }
    return a;
}

/* The rest of CanOptimizeContiguous after the early returns: OptimizeSlice, BuildSliceParams
 * or BuildStridedSliceParams over the (sorted) pairs; false: AsStrided. */
static inline bool ew_chain_slices(const aclTensor *t, const ew_axes *v, ew_chain *c)
{
    int64_t shp[ACLEMU_MAX_DIMS + 1], str[ACLEMU_MAX_DIMS + 1], src[ACLEMU_MAX_DIMS + 1];
    int m = v->n;
    for (int i = 0; i < m; i++)
        shp[i] = v->a[i].dim, str[i] = v->a[i].stride;
    if (m == 1) /* one dim [n] stride [s]: seen as [n, 1] stride [s, 1] */
        shp[1] = 1, str[1] = 1, m = 2;
    int64_t g = str[0], storage = 1, off = t->offset, size = 1;
    for (uint64_t i = 0; i < t->storage_ndim; i++)
        storage *= t->storage_dims[i];
    bool slice = str[m - 1] == 1;
    for (int i = 1; i < m; i++) {
        if (str[i - 1] % str[i])
            slice = false;
        if (str[i - 1] < str[i] * (shp[i] - 1)) /* overlapping elements */
            return false;
        if (i < m - 1)
            g = ew_gcd(g, str[i]);
    }
    if (slice) {
        for (int i = m - 2; i >= 0; i--)
            src[i + 1] = str[i] / str[i + 1], size *= src[i + 1];
        src[0] = storage / size;
        for (int i = 0; i < m; i++) {
            if (src[i] < off / str[i] + shp[i])
                return false;
            off %= str[i];
        }
        /* CanReplaceSliceTransposeWithAsStrided: the view's last dim, stride 1, 64 | size */
        if (c->transpose && t->strides[t->ndim - 1] == 1 && t->dims[t->ndim - 1] % 64 == 0)
            return false;
        c->slice = true;
        return true;
    }
    if (g <= 1 || g < str[m - 1] * shp[m - 1])
        return false;
    int64_t sst[ACLEMU_MAX_DIMS + 1];
    src[m - 1] = g, sst[m - 1] = 1, size = g;
    for (int i = m - 2; i >= 1; i--) {
        sst[i] = size, src[i] = str[i - 1] / size, size *= src[i];
        if (size == 0) /* not reached: no overlap makes every quotient >= 1 */
            return false;
    }
    src[0] = storage / size, sst[0] = size;
    for (int i = 0; i < m; i++) {
        if (str[i] % sst[i])
            return false;
        const int64_t begin = off / sst[i], step = str[i] / sst[i];
        off %= sst[i];
        if (src[i] < begin || (shp[i] - 1) * step + begin >= src[i] || src[i] < shp[i])
            return false;
    }
    c->strided_slice = true;
    return true;
}

/* CanOptimizeContiguous's choice for a non-contiguous view (the emulator refuses negative
 * strides; Validate holds, the view fitting its storage). */
static inline ew_chain ew_contiguous_chain(const aclTensor *t)
{
    ew_chain c = {0};
    ew_axes v = ew_view_axes(t);
    if (ew_as_strided_listed(&v)) {
        c.as_strided = true;
        return c;
    }
    c.broadcast = v.broadcast;
    if (v.broadcast && ew_axes_contiguous(&v))
        return c;
    c.transpose = v.transpose;
    if (v.transpose) {
        ew_axes_sort(&v);
        if (ew_axes_contiguous(&v))
            return c;
    }
    if (!ew_chain_slices(t, &v, &c))
        c = (ew_chain){.as_strided = true};
    return c;
}

/* The copy kernels' AI Core dtypes on Ascend 950 (the IsRegBase branch of IsAiCoreSupport in
 * ops-math conversion/{slice,strided_slice,transpose,broadcast_to,as_strided,view_copy}/
 * op_api), as bits of aclDataType values. */
#define EW_B(d) ((uint64_t)1 << ACL_##d)
#define EW_COMMON_3510                                                                          \
    (EW_B(FLOAT) | EW_B(FLOAT16) | EW_B(BF16) | EW_B(INT8) | EW_B(INT32) | EW_B(INT64) |     \
     EW_B(UINT8) | EW_B(UINT32) | EW_B(BOOL) | EW_B(HIFLOAT8) | EW_B(FLOAT8_E5M2) |           \
     EW_B(FLOAT8_E4M3FN))
#define EW_BROADCAST_TO_3510 EW_COMMON_3510
#define EW_TRANSPOSE_3510 (EW_COMMON_3510 | EW_B(INT16) | EW_B(UINT16) | EW_B(UINT64))
#define EW_VIEW_COPY_3510 EW_TRANSPOSE_3510
#define EW_SLICE_3510                                                                           \
    (EW_TRANSPOSE_3510 | EW_B(FLOAT8_E8M0) | EW_B(FLOAT4_E2M1) | EW_B(FLOAT4_E1M2))
#define EW_STRIDED_SLICE_3510 (EW_TRANSPOSE_3510 | EW_B(COMPLEX32) | EW_B(COMPLEX64))
#define EW_AS_STRIDED_3510 EW_STRIDED_SLICE_3510
#define EW_TENSOR_MOVE_3510 (EW_TRANSPOSE_3510 | EW_B(DOUBLE) | EW_B(COMPLEX32) | EW_B(COMPLEX64))

/* A copy kernel reading `in` (handle or -1) whose output of `bytes` the executor allocates
 * (0: none, ViewCopy's and Transpose's into the caller's tensor), with its arch35 tiling's
 * `ws` on Ascend 950 when dtype dt is on its AI Core list. Its output's handle (-1: none). */
static inline int ew_copy_kernel(ew_graph *g, int in, aclDataType dt, uint64_t aicore,
                                 uint64_t ws, uint64_t bytes)
{
    const int k = ew_kernel_reading(g, &in, 1);
    if (dt >= 0 && dt < 64 && (aicore >> dt & 1))
        ew_helper_workspace(g, k, ws);
    return bytes ? ew_output(g, k, bytes) : -1;
}

/* l0op::Contiguous of a caller's tensor: nothing when contiguous, else the chain
 * ew_contiguous_chain picks, each step's result alive until the next step reads it, the last
 * (the view's elements) until the caller's reader; its handle (-1: none). Arch35 tilings:
 * Slice and StridedSlice 16 MiB (strided_slice_tiling_arch35.h WORK_SPACE_SIZE; Slice runs
 * StrideSliceTiling's RunStrideSliceTiling), Transpose 16 MiB (transpose_tiling_arch35.h
 * WORK_SPACE_SIZE, its VCONV and gather templates SYS_WORKSPACE_SIZE), BroadcastTo 16 MiB
 * (broadcast_to_tiling_base.h kSyncWorkSpaceSize), AsStrided 16 MiB (as_strided_tiling_arch35
 * .cpp ExecuteTilingAndSetWorkspace: usrSize, a literal 0, + 16 MiB; its 8 MiB is the empty
 * output's, which is contiguous here); an AsStrided dtype off its AI Core list goes to the AI
 * CPU ViewCopy. A BOOL broadcast runs as Cast to INT32, BroadcastTo, Cast back. */
static inline int ew_contiguous_copy(ew_graph *g, const aclTensor *t)
{
    if (!t || ew_contiguous(t))
        return -1;
    const ew_chain c = ew_contiguous_chain(t);
    const aclDataType dt = t->dtype;
    const uint64_t es = aclemu_dtype_size(dt), n = ew_elems(t);
    if (c.as_strided)
        return ew_copy_kernel(g, -1, dt, EW_AS_STRIDED_3510, EW_SYS_WORKSPACE, n * es);
    uint64_t m = 1; /* the elements before the broadcast: the dims of non-zero stride */
    for (uint64_t i = 0; i < t->ndim; i++)
        m *= t->strides[i] ? (uint64_t)t->dims[i] : 1;
    int h = -1;
    if (c.slice)
        h = ew_copy_kernel(g, h, dt, EW_SLICE_3510, EW_SYS_WORKSPACE, m * es);
    if (c.strided_slice)
        h = ew_copy_kernel(g, h, dt, EW_STRIDED_SLICE_3510, EW_SYS_WORKSPACE, m * es);
    if (c.transpose)
        h = ew_copy_kernel(g, h, dt, EW_TRANSPOSE_3510, EW_SYS_WORKSPACE, m * es);
    if (c.broadcast && dt == ACL_BOOL) {
        h = ew_cast(g, h, ACL_BOOL, ACL_INT32, m);
        h = ew_copy_kernel(g, h, ACL_INT32, EW_BROADCAST_TO_3510, EW_SYS_WORKSPACE, n * 4);
        h = ew_cast(g, h, ACL_INT32, ACL_BOOL, n);
    } else if (c.broadcast) {
        h = ew_copy_kernel(g, h, dt, EW_BROADCAST_TO_3510, EW_SYS_WORKSPACE, n * es);
    }
    return h;
}

/* Whether l0op::ViewCopy hands a workspace result over to the contiguous caller's tensor
 * `user` (ops-math conversion/contiguous/op_host/op_api/contiguous.cpp ViewCopy): always where
 * SupportMoveAlign holds, i.e. off SocVersions ASCEND910 (the DAV_1001 parts, Ascend910A),
 * ASCEND310P (DAV_2002, Ascend310P3) and ASCEND310 (not emulated); on those only when the
 * tensor's storage holds exactly its view after its offset (storage elements == view
 * elements + view offset), else op::CopyNpuToNpu copies the result (a memcpy task, opbase
 * aclnn_engine/z_framework_op.cpp), which stays in the workspace until that copy. */
static inline bool ew_takes_over(int arch, const aclTensor *user)
{
    if (arch != 1001 && arch != 2002)
        return true;
    int64_t storage = 1;
    for (uint64_t i = 0; i < user->storage_ndim; i++)
        storage *= user->storage_dims[i];
    return storage == (int64_t)ew_elems(user) + user->offset;
}

/* l0op::TensorMove (ops-math conversion/tensor_move/op_api/tensor_move.cpp), by which
 * l0op::ViewCopy copies a contiguous tensor that is not the workspace's (a caller's) into
 * another contiguous caller's tensor `user`: a copy task (op::CopyNpuToNpu, no workspace) when
 * the data, view elements x dtype size, is small (IsCopyNpuToNpu: at most 400000 bytes on
 * SocVersions ASCEND910B, ASCEND910_93 and regbase, at most 800000 on ASCEND910, under 32 on
 * ASCEND310P); else the TensorMove kernel, whose one public tiling, Ascend 950's, asks 32
 * bytes for the dtypes of its regbase AI Core list (op_host/arch35/
 * tensor_move_tiling_arch35.cpp WORKSPACE_SIZE; off that list the AI CPU Identity, with no
 * host input for opbase's CalcDeviceCacheSize to count); elsewhere a TBE kernel: none. It
 * reads and writes the callers' memory only. */
static inline void ew_tensor_move(ew_graph *g, const aclTensor *user)
{
    const uint64_t bytes = ew_bytes(user, user->dtype);
    const bool task = g->arch == 1001   ? bytes <= 800000
                      : g->arch == 2002 ? bytes < 32
                                        : bytes <= 400000;
    ew_copy_kernel(g, -1, user->dtype, task ? 0 : EW_TENSOR_MOVE_3510, 32, 0);
}

/* The op_api's end for one output: Cast the kernel's result (handle tmp, dtype tmp_dt) to the
 * user tensor's dtype, then l0op::ViewCopy into it. A contiguous user tensor takes a workspace
 * result over (no kernel, no workspace) where ew_takes_over says so, else a copy task reads
 * it; a result an earlier ViewCopy handed to another caller's tensor lives there now (not
 * from the workspace: SetFromWorkspace(false)), so it is moved (ew_tensor_move); tmp -1 with
 * no Cast is the user tensor itself, updated in place (BatchNorm's running statistics), whose
 * ViewCopy onto its own address launches nothing. A strided one is written by a kernel
 * reading the result, Transpose when the output is a permutation of a contiguous layout
 * (CanOptimizeView: no 0 stride, the sorted pairs contiguous), else ViewCopy (arch35
 * view_copy_tiling_arch35.cpp WORKSPACE_SIZE, 32 bytes on both templates). */
static inline void ew_copy_out(ew_graph *g, int tmp, aclDataType tmp_dt, const aclTensor *user,
                               uint64_t n)
{
    const int cast = ew_cast(g, tmp, tmp_dt, user->dtype, n);
    if (ew_contiguous(user)) {
        if (cast >= 0 && g->t[cast].user)
            ew_tensor_move(g, user);
        else if (cast >= 0 && ew_takes_over(g->arch, user))
            g->t[cast].user = true;
        else if (cast >= 0)
            ew_kernel_reading(g, &cast, 1); /* op::CopyNpuToNpu */
        return;
    }
    ew_axes v = ew_view_axes(user);
    bool transpose = !v.broadcast && v.transpose;
    if (transpose) {
        ew_axes_sort(&v);
        transpose = ew_axes_contiguous(&v);
    }
    if (transpose)
        ew_copy_kernel(g, cast, user->dtype, EW_TRANSPOSE_3510, EW_SYS_WORKSPACE, 0);
    else
        ew_copy_kernel(g, cast, user->dtype, EW_VIEW_COPY_3510, 32, 0);
}
#undef EW_TENSOR_MOVE_3510
#undef EW_AS_STRIDED_3510
#undef EW_STRIDED_SLICE_3510
#undef EW_SLICE_3510
#undef EW_VIEW_COPY_3510
#undef EW_TRANSPOSE_3510
#undef EW_BROADCAST_TO_3510
#undef EW_COMMON_3510
#undef EW_B

/* A kernel reading no intermediate whose output of `bytes` the executor allocates, with its
 * tiling workspace on Ascend 950; an empty output launches nothing: don't call it then. */
static inline int ew_constant(ew_graph *g, uint64_t bytes, uint64_t tiling_on_3510)
{
    const int k = ew_kernel(g);
    ew_helper_workspace(g, k, tiling_on_3510);
    return ew_output(g, k, bytes);
}

/* l0op::Fill (ops-math conversion/fill/op_api/fill.cpp) or l0op::OnesLike (math/ones_like/
 * op_api/ones_like.cpp) of a floating dtype, on AI Core on Ascend 950. Its handle. */
static inline int ew_fill(ew_graph *g, uint64_t bytes)
{
    return ew_constant(g, bytes, EW_SYS_WORKSPACE);
}

/* op::ProcessEmptyTensorWithValue (ops-nn norm/norm_common/op_host/op_api/
 * norm_tensor_util.cpp), by which an op_api writes an empty call's statistics or gradients: a
 * Fill of t's shape and dtype, l0op::ViewCopy'd into t. An empty t launches nothing
 * (ops-math fill.cpp). */
static inline void ew_fill_into(ew_graph *g, const aclTensor *t)
{
    const uint64_t bytes = t ? ew_bytes(t, t->dtype) : 0;
    if (bytes)
        ew_copy_out(g, ew_fill(g, bytes), t->dtype, t, bytes / aclemu_dtype_size(t->dtype));
}

/* The workspace of an op_api's empty call that only writes ts[first..last], each through
 * ew_fill_into (the norm op_apis' empty-tensor branches). */
static inline uint64_t ew_empty_call(int arch, const aclTensor *const *ts, int first, int last)
{
    ew_graph g = ew_graph_on(arch);
    for (int i = first; i <= last; i++)
        ew_fill_into(&g, ts[i]);
    return ew_size(&g);
}

/* l0op::ZerosLike (math/zero_op/op_api/zero_op.cpp) of a floating dtype. Its handle. */
static inline int ew_zeros_like(ew_graph *g, uint64_t bytes)
{
    return ew_constant(g, bytes, 0);
}

/* A layout kernel reading `in` (handle or -1) whose output of `bytes` the executor allocates:
 * l0op::Transpose, l0op::TransDataSpecial (ops-math conversion/trans_data/op_api/
 * transdata.cpp) in the layout changes of the graphs off Ascend 950 (TBE there: none). Its
 * handle.
 * The same shape of kernel as any one-input L0 op with one output (ReduceSum, OnesLike, Expand,
 * an op whose other operand is a host scalar). */
static inline int ew_convert(ew_graph *g, int in, uint64_t bytes)
{
    const int k = ew_kernel(g);
    ew_read(g, in, k);
    return ew_output(g, k, bytes);
}

/* A two-input kernel (handles or -1) whose one output of `bytes` the executor allocates: an
 * elementwise l0op::Mul, Sub, Div on tensors. Its handle. */
static inline int ew_binary(ew_graph *g, int a, int b, uint64_t bytes)
{
    return ew_op(g, a, b, 0, bytes);
}

#endif /* ACLEMU_OPS_EXEC_WORKSPACE_H_ */
