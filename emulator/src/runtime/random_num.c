/*
 * aclrtRandomNumAsync: a stream task of the device's random number engine (a STARS DSA task;
 * hicann/runtime src/runtime/core/src/task/task_info/random_num_task.cc) filling
 * randomResultAddr with randomNum numbers of a distribution: a dropout bitmask (randomNum
 * bits), uniform, normal or truncated normal numbers (randomNum elements of dataType).
 *
 * CANN's checks and codes, in its order:
 * - the ACL layer (src/acl/aclrt_impl/kernel.cpp aclrtRandomNumAsyncImpl): taskInfo NULL, a
 *   dataType outside INT32, INT64, UINT32, UINT64, BF16, FLOAT16, FLOAT: 100000; then it
 *   writes the runtime's code of the type (rts_stars.h rtRandomNumDataType: INT32 0 ... FP32
 *   6) into the caller's taskInfo->dataType, though the prototype takes it const: so does the
 *   emulator, and a struct passed twice is read the second time as that code (ACL_FLOAT
 *   becomes 6, ACL_INT16, refused; ACL_INT32 becomes 0, ACL_FLOAT);
 * - the runtime (src/runtime/api/api_c_kernel.cc rtsLaunchRandomNumTask): the part's
 *   RT_FEATURE_TASK_RAND_GENERATOR (config/910_B_93: Atlas A2/A3 only; elsewhere 207000), the
 *   stream's handle (107017); api_error.cc LaunchRandomNumTask: reserve not NULL (107000);
 *   api_impl.cc: the current device (107002), the stream's device (107003); then
 *   random_num_task.cc CheckRandomNumTaskInfo, each 107000: funcType, dataType for funcType
 *   (dropout bitmask and the normal ones: BF16, FLOAT16, FLOAT; uniform: those and the four
 *   integer types), randomCounterAddr, randomResultAddr NULL, randomSeed then randomNum (isAddr
 *   0 or 1, size 1..8), then the distribution's parameters (isAddr 0 or 1; size 1..the
 *   element size, 1..8 for an address).
 * Then GetDsaSqeByRandomNumTask copies the two parameters (8 bytes each: the first size bytes
 * of each valueOrAddr, zero-padded) into randomParaAddr, or a buffer of the runtime's when it
 * is NULL, synchronously, at the call: the emulator writes randomParaAddr at the call too.
 *
 * Stricter than CANN, whose runtime hands the addresses to the engine unchecked (107000, each
 * named): randomParaAddr (16 bytes), randomCounterAddr (16 bytes), every parameter given by
 * address (the element, or 8 bytes for the seed and the count) and randomResultAddr (the
 * numbers, or randomNum / 8 bytes rounded up for a bitmask) must lie in one live allocation of
 * the stream's device. A count read from device memory is checked when the task runs: a
 * result that does not fit fails the task with 507053 (nothing written).
 *
 * What the emulator computes is its own, documented as such in docs/emulator.md: the vendor
 * names the engine's generator (Philox4_32_10, a 128-bit counter in randomCounterAddr: its
 * example's README) but not how it turns the generator's words into numbers. The emulator
 * keys Philox4x32-10 with the seed (low word first) and starts it at the 128-bit counter read
 * from randomCounterAddr when the task runs (four little-endian 32-bit words), leaving that
 * memory unchanged (whether the engine advances it is not public); uniform floats are min +
 * u * (max - min) with u in [0, 1) from the word's upper 24 bits, computed in float32 and
 * rounded to the element type (to nearest, ties to even); uniform integers are min plus the
 * 64-bit draw modulo max - min + 1 (so both ends are included; the whole range when that is
 * 0); normal numbers are mean + stddev * z with z from the Box-Muller transform; a truncated
 * normal number redraws z until |z| <= 2; a bitmask bit is 1 when its uniform u is at least
 * dropoutRation (so about that share of the bits are 0), bit i of the result being bit
 * (i % 8) of byte i / 8, the last byte's unused bits 0.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"
#include "../ops/half.h"

/* The runtime's codes of the element types (rts_stars.h rtRandomNumDataType). */
enum { RND_INT32, RND_INT64, RND_UINT32, RND_UINT64, RND_BF16, RND_FP16, RND_FP32 };
#define PARAM_BYTES 16 /* randomParaAddr: the two 8-byte parameters */
#define COUNTER_BYTES 16

/* One parameter as the task reads it: its 8 bytes (the value, or the address of the value). */
typedef struct {
    bool is_addr;
    uint64_t raw;
    void *token; /* an address parameter's allocation, pinned while the task is queued */
} rnd_param;

typedef struct {
    int func;      /* aclrtRandomNumFuncType */
    int type;      /* RND_* */
    size_t size;   /* bytes of an element (and of a parameter given by address) */
    rnd_param first, second, seed, num; /* first: ratio/min/mean; second: max/stddev */
    uint8_t *result;
    const uint8_t *counter;
    void *result_token, *counter_token;
} rnd_task;

/* ---- Philox4x32-10 (Salmon et al., SC'11): the generator the vendor names ---------------- */

typedef struct {
    uint32_t key[2], ctr[4], out[4];
    int used; /* words of out handed out */
} philox;

static void philox_block(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c0 = n0;
        c1 = (uint32_t)p1;
        c2 = n2;
        c3 = (uint32_t)p0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

static uint32_t next_word(philox *g) {
    if (g->used == 4) {
        philox_block(g->ctr, g->key, g->out);
        for (int i = 0; i < 4 && ++g->ctr[i] == 0; i++) /* the 128-bit counter's increment */
            ;
        g->used = 0;
    }
    return g->out[g->used++];
}

static uint64_t next_u64(philox *g) {
    uint64_t lo = next_word(g);
    return lo | (uint64_t)next_word(g) << 32;
}

static float next_unit(philox *g) { /* [0, 1) */
    return (float)(next_word(g) >> 8) * 0x1p-24f;
}

static double next_gauss(philox *g) {
    double u1 = ((next_word(g) >> 8) + 1.0) * 0x1p-24; /* (0, 1]: the logarithm is finite */
    double u2 = (next_word(g) >> 8) * 0x1p-24;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* ---- the task ---------------------------------------------------------------------------- */

/* A parameter's 8 bytes: the value itself, or read from its address when the task runs
 * (size bytes: the element, 8 for the seed and the count). */
static uint64_t param_bits(const rnd_param *p, size_t size) {
    if (!p->is_addr)
        return p->raw;
    uint64_t v = 0;
    memcpy(&v, (const void *)(uintptr_t)p->raw, size);
    return v;
}

static float float_of(int type, uint64_t bits) {
    if (type == RND_FP32)
        return aclemu_f32_from_bits((uint32_t)bits);
    return type == RND_FP16 ? aclemu_f16_to_f32((uint16_t)bits) : aclemu_bf16_to_f32((uint16_t)bits);
}

static void store_float(rnd_task *t, uint64_t i, float v) {
    if (t->type == RND_FP32) {
        memcpy(t->result + 4 * i, &v, 4);
        return;
    }
    uint16_t h = t->type == RND_FP16 ? aclemu_f32_to_f16(v) : aclemu_f32_to_bf16(v);
    memcpy(t->result + 2 * i, &h, 2);
}

static void store_integer(rnd_task *t, uint64_t i, uint64_t v) {
    memcpy(t->result + t->size * i, &v, t->size); /* the low bytes: the host's (and the
                                                   * device's) little-endian order */
}

static uint64_t result_bytes(int func, size_t size, uint64_t num) {
    return func == ACL_RT_RANDOM_NUM_FUNC_TYPE_DROPOUT_BITMASK ? num / 8 + (num % 8 != 0)
                                                                : num * size;
}

static void rnd_run(void *arg) {
    rnd_task *t = arg;
    uint64_t num = param_bits(&t->num, 8);
    bool too_big = t->func != ACL_RT_RANDOM_NUM_FUNC_TYPE_DROPOUT_BITMASK &&
                   num > UINT64_MAX / t->size;
    uint64_t bytes = too_big ? 0 : result_bytes(t->func, t->size, num);
    if (t->num.is_addr && (too_big || !aclemu_device_range(t->result, bytes))) {
        aclemu_task_fail(ACL_ERROR_RT_DEVICE_MEM_ERROR,
                         "aclrtRandomNumAsync: the count read from device memory makes a result "
                         "that runs past randomResultAddr's allocation");
        return;
    }
    philox g = {.used = 4};
    uint64_t seed = param_bits(&t->seed, 8);
    g.key[0] = (uint32_t)seed;
    g.key[1] = (uint32_t)(seed >> 32);
    memcpy(g.ctr, t->counter, COUNTER_BYTES);
    uint64_t first = param_bits(&t->first, t->size), second = param_bits(&t->second, t->size);
    switch (t->func) {
    case ACL_RT_RANDOM_NUM_FUNC_TYPE_DROPOUT_BITMASK: {
        float ratio = float_of(t->type, first);
        memset(t->result, 0, bytes);
        for (uint64_t i = 0; i < num; i++)
            if (next_unit(&g) >= ratio)
                t->result[i / 8] |= (uint8_t)(1u << (i % 8));
        break;
    }
    case ACL_RT_RANDOM_NUM_FUNC_TYPE_UNIFORM_DIS:
        if (t->type >= RND_BF16) {
            float lo = float_of(t->type, first), hi = float_of(t->type, second);
            for (uint64_t i = 0; i < num; i++)
                store_float(t, i, lo + next_unit(&g) * (hi - lo));
        } else {
            bool wide = t->type == RND_INT64 || t->type == RND_UINT64;
            /* max - min + 1 in the element's width: 0 is the whole range */
            uint64_t span = wide ? second - first + 1 : (uint32_t)(second - first + 1);
            for (uint64_t i = 0; i < num; i++) {
                uint64_t r = next_u64(&g);
                store_integer(t, i, first + (span == 0 ? r : r % span));
            }
        }
        break;
    default: { /* normal, truncated normal */
        bool truncated = t->func == ACL_RT_RANDOM_NUM_FUNC_TYPE_TRUNCATED_NORMAL_DIS;
        float mean = float_of(t->type, first), stddev = float_of(t->type, second);
        for (uint64_t i = 0; i < num; i++) {
            double z = next_gauss(&g);
            while (truncated && fabs(z) > 2.0)
                z = next_gauss(&g);
            store_float(t, i, mean + stddev * (float)z);
        }
        break;
    }
    }
}

static void unpin_param(rnd_param *p) {
    if (p->token != NULL)
        aclemu_device_unpin(p->token);
    p->token = NULL;
}

static void rnd_release(void *arg) {
    rnd_task *t = arg;
    unpin_param(&t->first);
    unpin_param(&t->second);
    unpin_param(&t->seed);
    unpin_param(&t->num);
    if (t->result_token != NULL)
        aclemu_device_unpin(t->result_token);
    if (t->counter_token != NULL)
        aclemu_device_unpin(t->counter_token);
    free(t);
}

/* ---- the checks ---------------------------------------------------------------------------- */

static bool acl_layer_type(aclDataType type, int *code) {
    switch (type) {
    case ACL_INT32: *code = RND_INT32; return true;
    case ACL_INT64: *code = RND_INT64; return true;
    case ACL_UINT32: *code = RND_UINT32; return true;
    case ACL_UINT64: *code = RND_UINT64; return true;
    case ACL_BF16: *code = RND_BF16; return true;
    case ACL_FLOAT16: *code = RND_FP16; return true;
    case ACL_FLOAT: *code = RND_FP32; return true;
    default: return false;
    }
}

static size_t type_size(int code) {
    return code == RND_INT64 || code == RND_UINT64 ? 8 : code >= RND_BF16 && code != RND_FP32 ? 2 : 4;
}

static const char *func_name(int func) {
    switch (func) {
    case ACL_RT_RANDOM_NUM_FUNC_TYPE_DROPOUT_BITMASK: return "DROPOUT_BITMASK";
    case ACL_RT_RANDOM_NUM_FUNC_TYPE_UNIFORM_DIS: return "UNIFORM_DIS";
    case ACL_RT_RANDOM_NUM_FUNC_TYPE_NORMAL_DIS: return "NORMAL_DIS";
    default: return "TRUNCATED_NORMAL_DIS";
    }
}

/* random_num_task.cc CheckRandomParam: isAddr 0 or 1, size 1..limit (an address: 8). */
static aclError check_param(const char *fn, const char *name, const aclrtRandomParaInfo *p,
                            size_t limit) {
    if (p->isAddr > 1)
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn, "%s.isAddr %u: 0 (a value) or 1 (an "
                      "address)", name, p->isAddr);
    if (p->isAddr)
        limit = 8;
    if (p->size == 0 || p->size > limit)
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn, "%s.size %u: 1..%zu bytes", name, p->size,
                      limit);
    return ACL_SUCCESS;
}

/* random_num_task.cc CheckRandomNumTaskInfo, in its order. */
static aclError check_task(const char *fn, const aclrtRandomNumTaskInfo *ti, int type) {
    int func = (int)ti->randomNumFuncParaInfo.funcType;
    if (func < ACL_RT_RANDOM_NUM_FUNC_TYPE_DROPOUT_BITMASK ||
        func > ACL_RT_RANDOM_NUM_FUNC_TYPE_TRUNCATED_NORMAL_DIS)
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                      "taskInfo->randomNumFuncParaInfo.funcType %d is no aclrtRandomNumFuncType "
                      "(0..3)", func);
    if (func != ACL_RT_RANDOM_NUM_FUNC_TYPE_UNIFORM_DIS && type < RND_BF16)
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn,
                      "taskInfo->dataType: %s takes BF16, FLOAT16 or FLOAT only (integers are "
                      "uniform only)", func_name(func));
    if (ti->randomCounterAddr == NULL)
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn, "taskInfo->randomCounterAddr is NULL");
    if (ti->randomResultAddr == NULL)
        return RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn, "taskInfo->randomResultAddr is NULL");
    aclError rc;
    if ((rc = check_param(fn, "taskInfo->randomSeed", &ti->randomSeed, 8)) != ACL_SUCCESS ||
        (rc = check_param(fn, "taskInfo->randomNum", &ti->randomNum, 8)) != ACL_SUCCESS)
        return rc;
    size_t size = type_size(type);
    const aclrtRandomNumFuncParaInfo *f = &ti->randomNumFuncParaInfo;
    switch (func) {
    case ACL_RT_RANDOM_NUM_FUNC_TYPE_DROPOUT_BITMASK:
        return check_param(fn, "dropoutBitmaskInfo.dropoutRation",
                           &f->paramInfo.dropoutBitmaskInfo.dropoutRation, size);
    case ACL_RT_RANDOM_NUM_FUNC_TYPE_UNIFORM_DIS:
        if ((rc = check_param(fn, "uniformDisInfo.min", &f->paramInfo.uniformDisInfo.min,
                              size)) != ACL_SUCCESS)
            return rc;
        return check_param(fn, "uniformDisInfo.max", &f->paramInfo.uniformDisInfo.max, size);
    default:
        if ((rc = check_param(fn, "normalDisInfo.mean", &f->paramInfo.normalDisInfo.mean,
                              size)) != ACL_SUCCESS)
            return rc;
        return check_param(fn, "normalDisInfo.stddev", &f->paramInfo.normalDisInfo.stddev, size);
    }
}

/* A parameter for the task: its first size bytes, zero-padded (as the runtime copies it);
 * an address parameter's value pinned (size: the value's bytes). */
static aclError take_param(const char *fn, const char *name, const aclrtRandomParaInfo *p,
                           size_t size, int dev, rnd_param *out) {
    out->is_addr = p->isAddr == 1;
    out->raw = 0;
    out->token = NULL;
    memcpy(&out->raw, p->valueOrAddr, p->size);
    if (!out->is_addr)
        return ACL_SUCCESS;
    aclError rc;
    out->token = rt_device_pin_on(fn, name, (const void *)(uintptr_t)out->raw, size, dev, &rc);
    return rc;
}

aclError aclrtRandomNumAsync(const aclrtRandomNumTaskInfo *taskInfo, const aclrtStream stream,
                             void *reserve) {
    const char *fn = __func__;
    aclError rc = rt_begin(fn, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    int dev = -1, type;
    rt_stream *s = NULL;
    rnd_task *t = NULL;
    if (taskInfo == NULL) {
        rc = ACL_LAYER_ERR(ACL_ERROR_INVALID_PARAM, fn, "taskInfo is NULL");
        goto out;
    }
    if (!acl_layer_type(taskInfo->dataType, &type)) {
        rc = ACL_LAYER_ERR(ACL_ERROR_INVALID_PARAM, fn,
                           "taskInfo->dataType %d: the data type is not one the call takes "
                           "(ACL_INT32, ACL_INT64, ACL_UINT32, ACL_UINT64, ACL_BF16, ACL_FLOAT16, "
                           "ACL_FLOAT)", (int)taskInfo->dataType);
        goto out;
    }
    /* CANN's ACL layer writes the runtime's code into the caller's struct (see the header). */
    ((aclrtRandomNumTaskInfo *)taskInfo)->dataType = (aclDataType)type;
    const aclemu_soc *soc = aclemu_soc_info(fn);
    if (soc == NULL) {
        rc = ACL_ERROR_RT_INTERNAL_ERROR; /* the message names ACL_EMU_SOC */
        goto out;
    }
    if (soc->npu_arch != 2201) {
        rc = RT_ERR(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, fn,
                    "%s (%s) has no random number tasks (Atlas A2/A3 only)", soc->name,
                    soc->series);
        goto out;
    }
    if ((rc = rt_stream_valid(stream, fn)) != ACL_SUCCESS)
        goto out;
    if (reserve != NULL) {
        rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn, "reserve is reserved and must be NULL");
        goto out;
    }
    if ((rc = rt_need_device(fn, &dev)) != ACL_SUCCESS ||
        (rc = rt_stream_get(stream, dev, fn, &s)) != ACL_SUCCESS ||
        (rc = check_task(fn, taskInfo, type)) != ACL_SUCCESS)
        goto out;
    if ((t = calloc(1, sizeof *t)) == NULL) {
        rc = RT_ERR(ACL_ERROR_RT_INTERNAL_ERROR, fn, "out of host memory");
        goto out;
    }
    const aclrtRandomNumFuncParaInfo *f = &taskInfo->randomNumFuncParaInfo;
    t->func = (int)f->funcType;
    t->type = type;
    t->size = type_size(type);
    t->result = taskInfo->randomResultAddr;
    t->counter = taskInfo->randomCounterAddr;
    /* The union's members share their first parameter's place: ratio, min, mean. */
    const aclrtRandomParaInfo *p1 = &f->paramInfo.uniformDisInfo.min, *p2 = NULL;
    if (t->func == ACL_RT_RANDOM_NUM_FUNC_TYPE_UNIFORM_DIS)
        p2 = &f->paramInfo.uniformDisInfo.max;
    else if (t->func != ACL_RT_RANDOM_NUM_FUNC_TYPE_DROPOUT_BITMASK)
        p2 = &f->paramInfo.normalDisInfo.stddev;
    const char *n1 = t->func == ACL_RT_RANDOM_NUM_FUNC_TYPE_DROPOUT_BITMASK
                         ? "taskInfo dropoutRation's address"
                     : t->func == ACL_RT_RANDOM_NUM_FUNC_TYPE_UNIFORM_DIS ? "taskInfo min's address"
                                                                         : "taskInfo mean's address";
    if ((rc = take_param(fn, n1, p1, t->size, dev, &t->first)) != ACL_SUCCESS ||
        (p2 != NULL && (rc = take_param(fn,
                                        p2 == &f->paramInfo.uniformDisInfo.max
                                            ? "taskInfo max's address"
                                            : "taskInfo stddev's address",
                                        p2, t->size, dev, &t->second)) != ACL_SUCCESS) ||
        (rc = take_param(fn, "taskInfo randomSeed's address", &taskInfo->randomSeed, 8, dev,
                         &t->seed)) != ACL_SUCCESS ||
        (rc = take_param(fn, "taskInfo randomNum's address", &taskInfo->randomNum, 8, dev,
                         &t->num)) != ACL_SUCCESS)
        goto out;
    void *para_token = NULL;
    if (taskInfo->randomParaAddr != NULL &&
        (para_token = rt_device_pin_on(fn, "taskInfo->randomParaAddr", taskInfo->randomParaAddr,
                                       PARAM_BYTES, dev, &rc)) == NULL)
        goto out;
    if (para_token != NULL)
        aclemu_device_unpin(para_token); /* written now, not by the task */
    if ((t->counter_token = rt_device_pin_on(fn, "taskInfo->randomCounterAddr", t->counter,
                                             COUNTER_BYTES, dev, &rc)) == NULL)
        goto out;
    /* A count given by value sizes the result now; one read from memory is checked by the
     * task (its allocation pinned whole). */
    uint64_t num = t->num.raw;
    bool fits = t->num.is_addr || t->func == ACL_RT_RANDOM_NUM_FUNC_TYPE_DROPOUT_BITMASK ||
                num <= UINT64_MAX / t->size;
    if ((t->result_token = rt_device_pin_on(
             fn, "taskInfo->randomResultAddr", t->result,
             t->num.is_addr || !fits ? 0 : result_bytes(t->func, t->size, num), dev, &rc)) ==
        NULL)
        goto out;
    if (!fits) {
        rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn, "taskInfo->randomNum %llu: the result "
                    "would not fit in memory", (unsigned long long)num);
        goto out;
    }
    if (taskInfo->randomParaAddr != NULL) {
        uint64_t params[2] = {t->first.raw, t->second.raw};
        memcpy(taskInfo->randomParaAddr, params, PARAM_BYTES);
    }
    if ((rc = rt_stream_push(s, rnd_run, rnd_release, t, fn)) == ACL_SUCCESS)
        t = NULL; /* the task's now */
out:
    if (t != NULL)
        rnd_release(t);
    if (s != NULL)
        rt_stream_put(s);
    rt_leave();
    return rc;
}
