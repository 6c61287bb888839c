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
 * contiguous.cpp ViewCopy) and takes no workspace.
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

static inline uint64_t ew_bytes(const aclTensor *t, aclDataType dt)
{
    uint64_t n = 1;
    for (uint64_t i = 0; i < t->ndim; i++)
        n *= (uint64_t)t->dims[i];
    return n * aclemu_dtype_size(dt);
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

/* l0op::Contiguous of a caller's tensor: nothing when contiguous, else a copy kernel whose
 * output (the view's elements) the executor allocates; its handle (-1: none). The copy
 * kernel's own tiling workspace is not modelled (docs/emulator.md). */
static inline int ew_contiguous_copy(ew_graph *g, const aclTensor *t)
{
    if (!t || ew_contiguous(t))
        return -1;
    return ew_output(g, ew_kernel(g), ew_bytes(t, t->dtype));
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

/* The op_api's end for one output: Cast the kernel's result (handle tmp, dtype tmp_dt) to the
 * user tensor's dtype, then l0op::ViewCopy into it: a contiguous user tensor takes the result
 * over (no kernel, no workspace), another is written by a copy kernel reading it. */
static inline void ew_copy_out(ew_graph *g, int tmp, aclDataType tmp_dt, const aclTensor *user,
                               uint64_t n)
{
    const int cast = ew_cast(g, tmp, tmp_dt, user->dtype, n);
    if (!ew_contiguous(user))
        ew_read(g, cast, ew_kernel(g));
    else if (cast >= 0)
        g->t[cast].user = true;
}

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
 * transdata.cpp). Its own tiling workspace is not modelled, as the copy kernels'. Its handle.
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
