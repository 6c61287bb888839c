/*
 * The steps every aclnn operator's phase one (…GetWorkspaceSize) shares, each with its one
 * message and status code: the out-pointers, the NULL and live checks of its tensors, the
 * executor made at the end; and the task allocation opening its launch (phase two). Each
 * operator calls them where the vendor's code does its own checks, so its order stays its own.
 */
#ifndef ACLEMU_OPS_PHASE_ONE_H_
#define ACLEMU_OPS_PHASE_ONE_H_

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "emu_internal.h"
#include "tensor_view.h"

/* Sets the message and returns the status code from the enclosing function. */
#define FAIL(code, ...)                \
    do {                               \
        aclemu_set_error(__VA_ARGS__); \
        return (code);                 \
    } while (0)

/* A storage format private to the device (the fractal and C0-blocked layouts), which the
 * operators' format checks refuse: the list of hicann/opbase
 * src/nnopbase/common/utils/format_utils.cpp IsPrivateFormat. */
static inline bool p1_private_format(aclFormat f)
{
    switch ((int)f) {
    case ACL_FORMAT_NC1HWC0: case ACL_FORMAT_FRACTAL_Z: case ACL_FORMAT_NDC1HWC0:
    case ACL_FRACTAL_Z_3D: case ACL_FORMAT_FRACTAL_NZ: case ACL_FORMAT_NC1HWC0_C04:
    case ACL_FORMAT_FRACTAL_NZ_C0_16: case ACL_FORMAT_FRACTAL_NZ_C0_32:
    case ACL_FORMAT_FRACTAL_NZ_C0_2: case ACL_FORMAT_FRACTAL_NZ_C0_4:
    case ACL_FORMAT_FRACTAL_NZ_C0_8:
        return true;
    default:
        return false;
    }
}

/* The out-pointers, before anything else: the vendor's L2_DFX_PHASE_1 opens phase one with
 * them (hicann/opbase src/nnopbase/composite_op/aclnn_engine/op_dfx.cpp CheckPhase1Params:
 * 161001). */
static inline aclnnStatus p1_out_pointers(const char *call, const uint64_t *workspaceSize,
                                          aclOpExecutor *const *executor)
{
    if (!workspaceSize)
        FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: workspaceSize (out pointer) is NULL", call);
    if (!executor)
        FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: executor (out pointer) is NULL", call);
    return ACLNN_SUCCESS;
}

/* t's dtype is one of list[0..n) (161002), else the message names t and the list as the
 * vendor's lists name the dtypes (qname: FLOAT16, BF16, INT8, ...). */
static inline aclnnStatus p1_dtype_in(const char *call, const aclTensor *t, const char *name,
                                      const aclDataType *list, int n)
{
    for (int i = 0; i < n; i++)
        if (t->dtype == list[i])
            return ACLNN_SUCCESS;
    char text[256] = "";
    size_t len = 0;
    for (int i = 0; i < n && len < sizeof text; i++)
        len += (size_t)snprintf(text + len, sizeof text - len, "%s%s", i ? ", " : "",
                                qname(list[i]));
    FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s is not supported: %s", call, name,
         qname(t->dtype), text);
}

/* The deterministic level a tiling reads as GetDeterministic, taken at phase one and kept
 * with the executor for its launch: opbase reads the process's value when it builds the
 * executor (hicann/opbase src/nnopbase/individual_op/api/individual_op_api.cpp
 * NnopbaseMatchArgs and composite_op/aclnn_engine/op_executor.cpp InitL2Phase1Context, both
 * through aclrtGetSysParamOpt(ACL_OPT_DETERMINISTIC): GetGlobalDeterministic in
 * individual_op/executor/indv_executor_utils.h). A failed read is 0 (off); level 1 with
 * option 2 (strong consistency) set to 1 reads as 2. Through the public runtime call, so it
 * works the same over a CANN install's runtime. */
static inline int64_t p1_deterministic(void)
{
    int64_t level = 0, consistency = 0;
    if (aclrtGetSysParamOpt(ACL_OPT_DETERMINISTIC, &level) != ACL_SUCCESS)
        return 0;
    if (level == 1 && aclrtGetSysParamOpt((aclSysParamOpt)2, &consistency) == ACL_SUCCESS &&
        consistency == 1)
        return 2;
    return level;
}

/* Tensors ts[from..to) are required (161001), the first NULL one named. */
static inline aclnnStatus p1_required(const char *call, const aclTensor *const *ts,
                                      const char *const *names, int from, int to)
{
    for (int i = from; i < to; i++)
        if (!ts[i])
            FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: %s is NULL", call, names[i]);
    return ACLNN_SUCCESS;
}

/* Every non-NULL one of the n tensors is a live aclTensor (checked in the registry before
 * anything is dereferenced). */
static inline aclnnStatus p1_live(const char *call, const aclTensor *const *ts,
                                  const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (ts[i] && !aclemu_handle_check(ts[i], ACLEMU_KIND_TENSOR))
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s (%p) is not a live aclTensor", call, names[i],
                 (const void *)ts[i]);
    return ACLNN_SUCCESS;
}

/* The bit of tensor ts[i], and the bits of ts[from..to), in p1_opening's required set (a
 * uint32_t: every operator has fewer than 32 tensors). */
#define P1_BIT(i) (1u << (i))
#define P1_BITS(from, to) ((uint32_t)((1ull << (to)) - (1ull << (from))))

/* The opening most operators' phase one shares, in this order: the injected fault; the
 * out-pointers (p1_out_pointers); the tensors whose bits are set in required, the first NULL
 * one by index refused (161001: ts[] follows the arguments, as the vendors' CheckNotNull
 * does); every given one live (p1_live); then the part (*soc; an unknown one: 561000, its
 * message set), or not read here where soc is NULL (the vendor's next checks come first).
 * An operator whose vendor order differs (the part read before the tensors, live before
 * NULL, another argument checked between) keeps its own steps, as that order is tested. */
static inline aclnnStatus p1_opening(const char *call, const aclTensor *const *ts,
                                     const char *const *names, int n, uint32_t required,
                                     const uint64_t *workspaceSize,
                                     aclOpExecutor *const *executor, const aclemu_soc **soc)
{
    if (aclemu_fault(call))
        return ACLNN_ERR_INNER;
    aclnnStatus st;
    if ((st = p1_out_pointers(call, workspaceSize, executor)))
        return st;
    for (int i = 0; i < n; i++)
        if ((required & P1_BIT(i)) && (st = p1_required(call, ts, names, i, i + 1)))
            return st;
    if ((st = p1_live(call, ts, names, n)))
        return st;
    if (soc && !(*soc = aclemu_soc_info(call)))
        return ACLNN_ERR_INNER; /* message set: ACL_EMU_SOC is not a known part */
    return ACLNN_SUCCESS;
}

/* The opening every generated operator without a kernel on the Atlas training series shares
 * (AddLayerNorm, AddLayerNormGrad, DeepNorm, DeepNormGrad: no op_api source, so phase one is
 * opbuild's code and the framework's steps, in the docs' code-table order): p1_opening with
 * every tensor of ts[0..n) but ts[optional] required (optional -1: none); then the Atlas
 * training series (npu_arch 1001), whose definition configures no kernel, so the framework's
 * kernel lookup (hicann/opbase individual_op/executor/indv_executor.cpp
 * CheckSocVersionAndParam) fails before any dtype is compared: 561003. */
static inline aclnnStatus p1_generated_opening(const char *call, const aclTensor *const *ts,
                                               const char *const *names, int n, int optional,
                                               const uint64_t *workspaceSize,
                                               aclOpExecutor *const *executor,
                                               const aclemu_soc **soc)
{
    const uint32_t required = P1_BITS(0, n) & ~(optional < 0 ? 0u : P1_BIT(optional));
    aclnnStatus st = p1_opening(call, ts, names, n, required, workspaceSize, executor, soc);
    if (st)
        return st;
    if ((*soc)->npu_arch == 1001)
        FAIL(ACLNN_ERR_INNER_FIND_KERNEL_ERROR, "%s: not supported on %s (%s): the operator "
             "has no kernel for that series", call, (*soc)->name, (*soc)->series);
    return ACLNN_SUCCESS;
}

/* The end of phase one: the executor owns payload from here (destroyed on failure) and keeps
 * every tensor given, as CANN's does; the out-pointers are written only on success. */
static inline aclnnStatus p1_finish(const char *call, const aclemu_executor_ops *ops,
                                    void *payload, uint64_t workspace_size,
                                    const aclTensor *const *ts, const char *const *names, int n,
                                    int ninputs, uint64_t *workspaceSize,
                                    aclOpExecutor **executor)
{
    aclOpExecutor *ex = aclemu_executor_new(ops, payload, workspace_size, ts, names,
                                            (uint64_t)n, (uint64_t)ninputs);
    if (!ex)
        FAIL(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: could not create the executor", call);
    *workspaceSize = workspace_size;
    *executor = ex;
    return ACLNN_SUCCESS;
}

/* A launch's task: size zeroed bytes, or NULL with the message set (the launch returns
 * ACLNN_ERR_INNER). */
static inline void *p2_task_new(const char *call, size_t size)
{
    void *task = calloc(1, size);
    if (!task)
        aclemu_set_error("%s: out of host memory for the launch", call);
    return task;
}

#endif /* ACLEMU_OPS_PHASE_ONE_H_ */
