/*
 * aclnnAdd, aclnnAdds, aclnnInplaceAdd, aclnnInplaceAdds for the CPU emulator:
 * out = self + alpha * other, with the vendor's phase-one checks in their order
 * (hicann/ops-math math/add/op_api/aclnn_add.cpp), its dtype promotion (hicann/opbase
 * include/nnopbase/opdev/data_type_utils.h: the promotion table and CanCast), NumPy-style
 * broadcasting, strided views, and the device's arithmetic:
 *
 * - alpha == 1 (compared as float): self and other are cast to the promoted dtype and added
 *   in it. 16-bit floats are added in float and rounded once to their dtype (float has more
 *   than twice their precision, so this is the correctly rounded sum, as the device's fp16
 *   add and its bf16 add-through-float give).
 * - otherwise, promoted FLOAT/FLOAT16/INT32 take the Axpy kernel: self + other * alpha
 *   computed in float (alpha read as float), rounded to the promoted dtype;
 * - any other promoted dtype: alpha becomes a tensor of the promoted dtype (rounded to it),
 *   other * alpha is computed and rounded in that dtype, then added (Mul, then Add).
 * - the result is cast to out's dtype (the vendor's Cast, then ViewCopy into a strided out).
 * Integers wrap (two's complement); BOOL add is a logical or, BOOL mul a logical and.
 *
 * What depends on the part (ACL_EMU_SOC, aclemu_soc_info): the dtype list (BFLOAT16 only on
 * NPU architectures 2201 and 3510); on 3510 ("regbase", the vendor's IsRegBase) the extra
 * promotion checks, alpha == 1 judged in double for DOUBLE and never for complex, Axpy for
 * FLOAT/FLOAT16/BF16 only, and aclnnAdds' other promotion. The Atlas inference series
 * (architecture 2002) takes the same path as the Atlas training series: the vendor's code has
 * no check for it (its dtype lists' default branch is the ASCEND910 one, so no BF16).
 */
#include <complex.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"
#include "ops/exec_workspace.h"
#include "ops/half.h"
#include "ops/view_memory.h"

#include "aclnnop/aclnn_add.h"

#define MAX_RANK 8

/* ---- dtypes -------------------------------------------------------------------------------- */

/* The dtypes aclnnAdd takes for self/other: the vendor's ASCEND910B list (architectures 2201
 * and 3510) has BF16, its ASCEND910 list (every other architecture) does not. */
static bool add_dtype_ok(aclDataType d, int arch) {
    switch (d) {
    case ACL_FLOAT: case ACL_INT32: case ACL_INT64: case ACL_FLOAT16: case ACL_INT16:
    case ACL_INT8: case ACL_UINT8: case ACL_DOUBLE: case ACL_BOOL: case ACL_COMPLEX64:
    case ACL_COMPLEX128:
        return true;
    case ACL_BF16:
        return arch == 2201 || arch == 3510;
    default:
        return false;
    }
}


static bool is_complex(aclDataType d) {
    return d == ACL_COMPLEX64 || d == ACL_COMPLEX128 || d == ACL_COMPLEX32;
}
static bool is_floating(aclDataType d) {
    return d == ACL_FLOAT || d == ACL_FLOAT16 || d == ACL_BF16 || d == ACL_DOUBLE ||
           ((int)d >= 34 && (int)d <= 41);
}
static bool is_integral(aclDataType d) {
    switch (d) {
    case ACL_INT8: case ACL_INT16: case ACL_INT32: case ACL_INT64: case ACL_UINT8:
    case ACL_UINT16: case ACL_UINT32: case ACL_UINT64:
        return true;
    default:
        return false;
    }
}

/* The vendor's CanCast: no complex -> real, no floating -> integral, nothing but BOOL -> BOOL. */
static bool can_cast(aclDataType from, aclDataType to) {
    if (is_complex(from) && !is_complex(to))
        return false;
    if (is_floating(from) && is_integral(to))
        return false;
    if (from != ACL_BOOL && to == ACL_BOOL)
        return false;
    return true;
}

/* The vendor's promotion table restricted to the dtypes Add takes (ACL_DT_UNDEFINED: none).
 * Order of rows/columns: */
enum { P_F32, P_F16, P_I8, P_I32, P_U8, P_I16, P_I64, P_F64, P_BOOL, P_C64, P_C128, P_BF16,
       P_N };
static const aclDataType P_DT[P_N] = {ACL_FLOAT, ACL_FLOAT16, ACL_INT8, ACL_INT32, ACL_UINT8,
                                      ACL_INT16, ACL_INT64, ACL_DOUBLE, ACL_BOOL,
                                      ACL_COMPLEX64, ACL_COMPLEX128, ACL_BF16};
#define F4 ACL_FLOAT
#define F2 ACL_FLOAT16
#define I1 ACL_INT8
#define I4 ACL_INT32
#define U1 ACL_UINT8
#define I2 ACL_INT16
#define I8 ACL_INT64
#define F8 ACL_DOUBLE
#define B1 ACL_BOOL
#define C4 ACL_COMPLEX64
#define C8 ACL_COMPLEX128
#define BF ACL_BF16
static const aclDataType PROMOTE[P_N][P_N] = {
    /*        F32 F16 I8  I32 U8  I16 I64 F64 BOOL C64 C128 BF16 */
    /* F32 */ {F4, F4, F4, F4, F4, F4, F4, F8, F4, C4, C8, F4},
    /* F16 */ {F4, F2, F2, F2, F2, F2, F2, F8, F2, C4, C8, F4},
    /* I8  */ {F4, F2, I1, I4, I2, I2, I8, F8, I1, C4, C8, BF},
    /* I32 */ {F4, F2, I4, I4, I4, I4, I8, F8, I4, C4, C8, BF},
    /* U8  */ {F4, F2, I2, I4, U1, I2, I8, F8, U1, C4, C8, BF},
    /* I16 */ {F4, F2, I2, I4, I2, I2, I8, F8, I2, C4, C8, BF},
    /* I64 */ {F4, F2, I8, I8, I8, I8, I8, F8, I8, C4, C8, BF},
    /* F64 */ {F8, F8, F8, F8, F8, F8, F8, F8, F8, C8, C8, F8},
    /* BOOL*/ {F4, F2, I1, I4, U1, I2, I8, F8, B1, C4, C8, BF},
    /* C64 */ {C4, C4, C4, C4, C4, C4, C4, C8, C4, C4, C8, C4},
    /* C128*/ {C8, C8, C8, C8, C8, C8, C8, C8, C8, C8, C8, C8},
    /* BF16*/ {F4, F4, BF, BF, BF, BF, BF, F8, BF, C4, C8, BF},
};

static int p_index(aclDataType d) {
    for (int i = 0; i < P_N; i++)
        if (P_DT[i] == d)
            return i;
    return -1;
}

static aclDataType promote(aclDataType a, aclDataType b) {
    int i = p_index(a), j = p_index(b);
    return i < 0 || j < 0 ? ACL_DT_UNDEFINED : PROMOTE[i][j];
}

static const char *dname(aclDataType d) {
    const char *n = aclemu_dtype_name(d);
    return strncmp(n, "ACL_", 4) == 0 ? n + 4 : n; /* "FLOAT16", as the vendor prints */
}

/* ---- values -------------------------------------------------------------------------------- */

/* One element in the class of its dtype: integers and BOOL in i, reals in re, complex in
 * re/im. */
typedef struct {
    int64_t i;
    double re, im;
} num;

static int ebits(aclDataType d) { return (int)aclemu_dtype_size(d) * 8; }
static bool is_unsigned(aclDataType d) {
    return d == ACL_UINT8 || d == ACL_UINT16 || d == ACL_UINT32 || d == ACL_UINT64;
}

/* Wraps an integer to d's width (two's complement), as the device's integer units do. */
static int64_t wrap(uint64_t u, aclDataType d) {
    int b = ebits(d);
    if (b >= 64)
        return (int64_t)u;
    uint64_t m = (1ull << b) - 1;
    u &= m;
    if (!is_unsigned(d) && (u >> (b - 1)))
        u |= ~m;
    return (int64_t)u;
}

/* Rounds a real to d (16-bit floats through float: RNE). */
static double round_to(double v, aclDataType d) {
    switch (d) {
    case ACL_FLOAT: case ACL_COMPLEX64: return (float)v;
    case ACL_FLOAT16: return aclemu_f16_to_f32(aclemu_f32_to_f16((float)v));
    case ACL_BF16: return aclemu_bf16_to_f32(aclemu_f32_to_bf16((float)v));
    default: return v;
    }
}

static num load(const char *p, aclDataType d) {
    num v = {0, 0, 0};
    switch (d) {
    case ACL_FLOAT: { float f; memcpy(&f, p, 4); v.re = f; break; }
    case ACL_DOUBLE: memcpy(&v.re, p, 8); break;
    case ACL_FLOAT16: { uint16_t h; memcpy(&h, p, 2); v.re = aclemu_f16_to_f32(h); break; }
    case ACL_BF16: { uint16_t h; memcpy(&h, p, 2); v.re = aclemu_bf16_to_f32(h); break; }
    case ACL_COMPLEX64: { float c[2]; memcpy(c, p, 8); v.re = c[0]; v.im = c[1]; break; }
    case ACL_COMPLEX128: { double c[2]; memcpy(c, p, 16); v.re = c[0]; v.im = c[1]; break; }
    case ACL_BOOL: v.i = *(const uint8_t *)p != 0; break;
    case ACL_INT8: v.i = *(const int8_t *)p; break;
    case ACL_UINT8: v.i = *(const uint8_t *)p; break;
    case ACL_INT16: { int16_t x; memcpy(&x, p, 2); v.i = x; break; }
    case ACL_UINT16: { uint16_t x; memcpy(&x, p, 2); v.i = x; break; }
    case ACL_INT32: { int32_t x; memcpy(&x, p, 4); v.i = x; break; }
    case ACL_UINT32: { uint32_t x; memcpy(&x, p, 4); v.i = x; break; }
    case ACL_INT64: case ACL_UINT64: memcpy(&v.i, p, 8); break;
    default: break;
    }
    return v;
}

static void store(char *p, aclDataType d, num v) {
    switch (d) {
    case ACL_FLOAT: { float f = (float)v.re; memcpy(p, &f, 4); break; }
    case ACL_DOUBLE: memcpy(p, &v.re, 8); break;
    case ACL_FLOAT16: { uint16_t h = aclemu_f32_to_f16((float)v.re); memcpy(p, &h, 2); break; }
    case ACL_BF16: { uint16_t h = aclemu_f32_to_bf16((float)v.re); memcpy(p, &h, 2); break; }
    case ACL_COMPLEX64: { float c[2] = {(float)v.re, (float)v.im}; memcpy(p, c, 8); break; }
    case ACL_COMPLEX128: { double c[2] = {v.re, v.im}; memcpy(p, c, 16); break; }
    case ACL_BOOL: *(uint8_t *)p = v.i != 0; break;
    case ACL_INT8: case ACL_UINT8: *(uint8_t *)p = (uint8_t)v.i; break;
    case ACL_INT16: case ACL_UINT16: { uint16_t x = (uint16_t)v.i; memcpy(p, &x, 2); break; }
    case ACL_INT32: case ACL_UINT32: { uint32_t x = (uint32_t)v.i; memcpy(p, &x, 4); break; }
    case ACL_INT64: case ACL_UINT64: memcpy(p, &v.i, 8); break;
    default: break;
    }
}

enum { K_INT, K_BOOL, K_REAL, K_COMPLEX };
static int kind_of(aclDataType d) {
    if (d == ACL_BOOL)
        return K_BOOL;
    if (is_integral(d))
        return K_INT;
    return is_complex(d) ? K_COMPLEX : K_REAL;
}

/* The vendor's Cast from `from` to `to` (only casts can_cast allows reach here, plus the
 * identity). Integer -> 16-bit float goes through float, as the device converts. */
static num cast(num v, aclDataType from, aclDataType to) {
    int kf = kind_of(from), kt = kind_of(to);
    num r = {0, 0, 0};
    if (kt == K_BOOL) {
        r.i = kf == K_BOOL || kf == K_INT ? v.i != 0 : (v.re != 0 || v.im != 0);
    } else if (kt == K_INT) {
        if (kf == K_INT || kf == K_BOOL)
            r.i = wrap((uint64_t)v.i, to);
        else
            r.i = wrap((uint64_t)(int64_t)v.re, to); /* not reachable through can_cast */
    } else {
        double re = kf == K_INT || kf == K_BOOL ? (to == ACL_DOUBLE || to == ACL_COMPLEX128
                                                       ? (double)v.i : (double)(float)v.i)
                                                 : v.re;
        r.re = round_to(re, to);
        r.im = kt == K_COMPLEX && kf == K_COMPLEX ? round_to(v.im, to) : 0.0;
    }
    return r;
}

static num add_in(num a, num b, aclDataType d) {
    num r = {0, 0, 0};
    switch (kind_of(d)) {
    case K_BOOL: r.i = a.i || b.i; break;
    case K_INT: r.i = wrap((uint64_t)a.i + (uint64_t)b.i, d); break;
    default:
        if (d == ACL_DOUBLE || d == ACL_COMPLEX128) {
            r.re = a.re + b.re;
            r.im = a.im + b.im;
        } else {
            r.re = round_to((float)a.re + (float)b.re, d);
            r.im = round_to((float)a.im + (float)b.im, d);
        }
    }
    return r;
}

static num mul_in(num a, num b, aclDataType d) {
    num r = {0, 0, 0};
    switch (kind_of(d)) {
    case K_BOOL: r.i = a.i && b.i; break;
    case K_INT: r.i = wrap((uint64_t)a.i * (uint64_t)b.i, d); break;
    case K_REAL:
        r.re = d == ACL_DOUBLE ? a.re * b.re : round_to((float)a.re * (float)b.re, d);
        break;
    default:
        if (d == ACL_COMPLEX128) {
            r.re = a.re * b.re - a.im * b.im;
            r.im = a.re * b.im + a.im * b.re;
        } else {
            float ar = (float)a.re, ai = (float)a.im, br = (float)b.re, bi = (float)b.im;
            r.re = (float)(ar * br - ai * bi);
            r.im = (float)(ar * bi + ai * br);
        }
    }
    return r;
}

/* An aclScalar as a value of its own dtype's class. */
static num scalar_num(const aclScalar *s) {
    num v = {0, 0, 0};
    if (kind_of(s->dtype) == K_INT || s->dtype == ACL_BOOL) {
        v.i = aclemu_scalar_to_int64(s);
    } else {
        v.re = aclemu_scalar_to_double(s);
        if (s->dtype == ACL_COMPLEX64) {
            float c[2];
            memcpy(c, s->bytes, 8);
            v.im = c[1];
        } else if (s->dtype == ACL_COMPLEX128) {
            double c[2];
            memcpy(c, s->bytes, 16);
            v.im = c[1];
        }
    }
    return v;
}

/* A double rounded once to FLOAT16 (to nearest even, subnormals included, overflow to inf),
 * as the vendor's fp16_t does from a double (hicann/opbase src/nnopbase/common/utils/
 * fp16_t.cpp operator=(const double &)): what aclScalar::ToFp16 gives a DOUBLE scalar.
 * Through float it would round twice. The result is exact in FLOAT16 (and in float). */
static double f16_round_double(double v) {
    if (isnan(v) || isinf(v))
        return v;
    double a = fabs(v);
    if (a >= 65520.0) /* at or above the tie between 65504 and the next binade */
        return copysign(INFINITY, v);
    int e;
    (void)frexp(a, &e);                  /* a in [2^(e-1), 2^e) */
    int lead = e - 1 < -14 ? -14 : e - 1; /* below 2^-14 the spacing is the subnormals' */
    double ulp = ldexp(1.0, lead - 10);
    return copysign(rint(a / ulp) * ulp, v); /* a / ulp is exact; rint: to nearest even */
}

/* An aclScalar's value as the vendor's aclScalar::To<dtype> gives it for a tensor of dtype
 * `to` (ConvertToTensor, GetCastedFloat): a cast from the scalar's own dtype, except that a
 * DOUBLE scalar becomes FLOAT16 in one rounding (BF16 goes through float there too:
 * include/nnopbase/opdev/bfloat16.h). */
static num scalar_as(const aclScalar *s, aclDataType to) {
    num v = scalar_num(s);
    if (s->dtype == ACL_DOUBLE && to == ACL_FLOAT16) {
        v.re = f16_round_double(v.re);
        return v;
    }
    return cast(v, s->dtype, to);
}

/* ---- the executor's payload ----------------------------------------------------------------- */

typedef enum { PATH_ADD, PATH_AXPY, PATH_MUL_ADD } add_path;

/* Snapshot of a tensor taken in phase one (the caller may destroy it before phase two),
 * with its dims aligned to out's rank (broadcast dims get stride 0). */
typedef struct {
    aclDataType dtype;
    uint32_t es;
    char *data;
    int64_t offset;
    int64_t strides[MAX_RANK]; /* aligned to out's dims */
    /* the view as given, for the memory checks */
    int ndim;
    int64_t dims[MAX_RANK];
    int64_t vstrides[MAX_RANK];
} adesc;

enum { A_SELF, A_OTHER, A_OUT, A_COUNT };

typedef struct {
    const char *p2;          /* the phase-two name, for messages */
    const char *names[A_COUNT];
    adesc t[A_COUNT];
    bool other_is_scalar;    /* Adds: other is `other_calc`, already in the promoted dtype */
    num other_calc;
    int nd;
    int64_t dims[MAX_RANK];  /* out's shape */
    int64_t n;               /* elements */
    aclDataType calc;        /* promoted dtype */
    add_path path;
    num alpha;               /* in calc's class (PATH_MUL_ADD) */
    float alpha_f;           /* PATH_AXPY */
    bool bool_fix;           /* Adds: BOOL + True * True into a non-BOOL out stays 1 */
} add_payload;

typedef struct {
    add_payload p;
    void *pins[A_COUNT + 1]; /* + the workspace's slot (vm_pin) */
    int npins;
} add_task;

#define CHUNK 16384

static void add_range(void *ctx, int64_t chunk, int64_t begin, int64_t end) {
    (void)chunk;
    const add_payload *P = ctx;
    int nd = P->nd;
    int64_t idx[MAX_RANK];
    int64_t rem = begin;
    for (int k = nd - 1; k >= 0; k--) {
        idx[k] = P->dims[k] ? rem % P->dims[k] : 0;
        rem = P->dims[k] ? rem / P->dims[k] : 0;
    }
    for (int64_t e = begin; e < end; e++) {
        int64_t off[A_COUNT];
        for (int a = 0; a < A_COUNT; a++) {
            off[a] = P->t[a].offset;
            for (int k = 0; k < nd; k++)
                off[a] += idx[k] * P->t[a].strides[k];
        }
        const adesc *s = &P->t[A_SELF], *o = &P->t[A_OTHER], *y = &P->t[A_OUT];
        num a = cast(load(s->data + off[A_SELF] * s->es, s->dtype), s->dtype, P->calc);
        num b = P->other_is_scalar
                    ? P->other_calc
                    : cast(load(o->data + off[A_OTHER] * o->es, o->dtype), o->dtype, P->calc);
        num r;
        if (P->path == PATH_ADD) {
            r = add_in(a, b, P->calc);
        } else if (P->path == PATH_AXPY) {
            float fa = kind_of(P->calc) == K_REAL ? (float)a.re : (float)a.i;
            float fb = kind_of(P->calc) == K_REAL ? (float)b.re : (float)b.i;
            float f = fa + fb * P->alpha_f;
            if (kind_of(P->calc) == K_INT) {
                r.i = isnan(f) ? 0 : (int64_t)rintf(f);
                r.i = wrap((uint64_t)r.i, P->calc);
                r.re = r.im = 0;
            } else {
                r.re = round_to(f, P->calc);
                r.im = 0;
                r.i = 0;
            }
        } else {
            r = add_in(a, mul_in(b, P->alpha, P->calc), P->calc);
        }
        num out = cast(r, P->calc, y->dtype);
        if (P->bool_fix)
            out = cast(cast(out, y->dtype, ACL_BOOL), ACL_BOOL, y->dtype);
        store(y->data + off[A_OUT] * y->es, y->dtype, out);
        for (int k = nd - 1; k >= 0; k--) {
            if (++idx[k] < P->dims[k])
                break;
            idx[k] = 0;
        }
    }
}

static void task_run(void *arg) {
    add_task *T = arg;
    const add_payload *P = &T->p;
    if (P->n == 0)
        return;
    aclemu_parallel_for(P->n, (P->n + CHUNK - 1) / CHUNK, add_range, (void *)P);
}

static void task_release(void *arg) {
    add_task *T = arg;
    for (int i = 0; i < T->npins; i++)
        aclemu_device_unpin(T->pins[i]);
    free(T);
}

static aclnnStatus add_launch(void *payload, void *const *addrs, void *workspace,
                              uint64_t workspace_size, aclrtStream stream) {
    (void)workspace;
    (void)workspace_size;
    add_task *T = calloc(1, sizeof *T);
    if (!T) {
        aclemu_set_error("%s: out of host memory for the launch", ((add_payload *)payload)->p2);
        return ACLNN_ERR_INNER;
    }
    T->p = *(const add_payload *)payload;
    const add_payload *P = &T->p;
    /* the tensors at the addresses they record now: the executor lists self, other, out, or
     * self, out when other is a scalar (aclnnAdds) */
    int k = 0;
    for (int i = 0; i < A_COUNT; i++)
        if (!(i == A_OTHER && P->other_is_scalar))
            T->p.t[i].data = addrs[k++];
    vm_view mem[A_COUNT];
    bool present[A_COUNT];
    for (int i = 0; i < A_COUNT; i++) {
        const adesc *d = &P->t[i];
        /* nothing is touched by an empty result; a scalar `other` is no view */
        present[i] = P->n > 0 && !(i == A_OTHER && P->other_is_scalar);
        mem[i] = (vm_view){d->data, d->offset, d->es, d->ndim, d->dims, d->vstrides};
    }
    return vm_launch(P->p2, stream, mem, present, P->names, A_COUNT, NULL, 0, T->pins,
                     &T->npins, task_run, task_release, T);
}

static void add_destroy(void *payload) { free(payload); }

static const aclemu_executor_ops ADD_OPS = {"aclnnAdd", add_launch, add_destroy};
static const aclemu_executor_ops ADDS_OPS = {"aclnnAdds", add_launch, add_destroy};
static const aclemu_executor_ops IADD_OPS = {"aclnnInplaceAdd", add_launch, add_destroy};
static const aclemu_executor_ops IADDS_OPS = {"aclnnInplaceAdds", add_launch, add_destroy};

/* aclnnAdds' promotion off 3510 (the vendor's PromoteTypeScalar, non-regbase branch). */
static aclDataType adds_promote(aclDataType self, aclDataType other, aclDataType out) {
    if (is_complex(self) || is_complex(other))
        return promote(self, other);
    if (is_floating(self))
        return self;
    if (other == ACL_DOUBLE && out == ACL_FLOAT)
        return ACL_FLOAT;
    if (is_floating(other) || self == ACL_BOOL)
        return promote(self, other);
    return self;
}

/* The same on 3510: the scalar counts as FLOAT (COMPLEX64) when floating (complex), the
 * categories combine as the vendor's CombineCategoriesWithComplex, and a FLOAT16/BF16 result
 * becomes FLOAT unless other and alpha are exact in it. */
static aclDataType adds_promote_regbase(aclDataType self, const aclScalar *other,
                                        const aclScalar *alpha) {
    aclDataType o = is_complex(other->dtype) ? ACL_COMPLEX64
                    : is_floating(other->dtype) ? ACL_FLOAT : other->dtype;
    aclDataType r;
    if (is_complex(self)) {
        r = self;
    } else if (is_complex(o)) {
        r = !is_floating(self) ? o : self == ACL_DOUBLE ? ACL_COMPLEX128
                                   : self == ACL_FLOAT16 ? ACL_COMPLEX32 : ACL_COMPLEX64;
    } else if (is_floating(self)) {
        r = self;
    } else if (self == ACL_BOOL || is_floating(o)) {
        r = promote(self, o);
    } else {
        r = self != ACL_DT_UNDEFINED ? self : o;
    }
    if (r == ACL_FLOAT16 || r == ACL_BF16) {
        /* GetCastedFloat: the scalar as a FLOAT16/BF16 (scalar_as), then as float */
        float ov = (float)aclemu_scalar_to_double(other), av = (float)aclemu_scalar_to_double(alpha);
        float oc = (float)scalar_as(other, r).re, ac = (float)scalar_as(alpha, r).re;
        bool keep = fabsf(oc - ov) <= 1.1920929e-07f && fabsf(ac - av) <= 1.1920929e-07f;
        if (!keep)
            r = ACL_FLOAT;
    }
    return r == ACL_COMPLEX32 ? ACL_COMPLEX64 : r;
}

/* ---- phase one's workspace on a device ------------------------------------------------------ */

/* The dtypes the L0 Add and Mul run on AI Core (hicann/ops-math math/add/op_api/add.cpp,
 * math/mul/op_api/mul.cpp: their lists by NPU architecture); the others go to AI CPU. */
static bool add_aicore(aclDataType d, int arch) {
    switch (d) {
    case ACL_FLOAT: case ACL_FLOAT16: case ACL_INT32: case ACL_INT8: case ACL_UINT8:
    case ACL_INT64: case ACL_BOOL:
        return true;
    case ACL_BF16: case ACL_COMPLEX64:
        return arch == 2201 || arch == 3510;
    default:
        return false;
    }
}

static bool mul_aicore(aclDataType d, int arch) {
    if (arch == 3510 && (d == ACL_INT16 || d == ACL_DOUBLE)) /* + IsDoubleSupport */
        return true;
    return add_aicore(d, arch);
}

/* The vendor's mixed-dtype Add (l0op::Add, isAddMixDtypeSupport): FLOAT16/BF16 with FLOAT
 * either way round, one kernel, a FLOAT result. */
static bool add_mixed(aclDataType a, aclDataType b) {
    bool half_a = a == ACL_FLOAT16 || a == ACL_BF16, half_b = b == ACL_FLOAT16 || b == ACL_BF16;
    return (half_a && b == ACL_FLOAT) || (a == ACL_FLOAT && half_b);
}

/* AxpyV2's dtypes on Ascend 950 (aclnn_add.cpp ARCH_REGBASE_AXPY_V2_DTYPE_SUPPORT_LIST). */
static bool axpy_v2_dtype(aclDataType d) {
    switch (d) {
    case ACL_FLOAT: case ACL_BF16: case ACL_FLOAT16: case ACL_INT32: case ACL_INT64:
    case ACL_INT8: case ACL_UINT8: case ACL_BOOL:
        return true;
    default:
        return false;
    }
}

typedef struct {
    int arch;
    aclDataType calc;
    bool one, one_f;  /* IsEqualToOne; alpha "neither > 1 nor < 1" as a float */
    bool axpy, axpy_v2;
    bool bool_fix;
} add_route;

/* One elementwise kernel of the graph reading a and b (handles or -1), writing n elements of
 * dtype dt: on Ascend 950 an AI Core one's broadcast tiling asks for 16 MiB
 * (hicann/opbase pkg_inc/op_common/atvoss/broadcast/broadcast_tiling.h DoTiling:
 * DEFAULT_TILING_WORKSPACE_SIZE, the Add, Axpy, AxpyV2 and Mul arch35 tilings of ops-math);
 * elsewhere they are TBE kernels (no public tiling: none counted), and an AI CPU kernel takes
 * none from the graph. Returns the result's handle. */
static int elementwise_kernel(ew_graph *g, const add_route *R, bool aicore, int a, int b,
                              uint64_t n, aclDataType dt) {
    const int k = ew_kernel(g);
    ew_read(g, a, k);
    ew_read(g, b, k);
    if (aicore && R->arch == 3510)
        ew_kernel_workspace(g, k, EW_SYS_WORKSPACE);
    return ew_output(g, k, n * aclemu_dtype_size(dt));
}

/* aclnnAddGetWorkspaceSize's graph (aclnn_add.cpp; exec_workspace.h): none for an empty self
 * or other; the mixed-dtype Add with alpha 1 (strided inputs read as they are on Ascend 950,
 * copied elsewhere); alpha 1 with self, other and the promoted dtype equal: one Add, strided
 * inputs read as they are on Ascend 950 when both dtypes run on AI Core; otherwise Contiguous
 * copies and Casts to the promoted dtype, then Add, Axpy, AxpyV2 (Ascend 950) or Mul by the
 * alpha tensor and Add; the result cast to out's dtype and copied into it. */
static uint64_t add_device_workspace(const add_route *R, const aclTensor *self,
                                     const aclTensor *other, const aclTensor *out, uint64_t n) {
    const uint64_t ns = ew_elems(self), no = ew_elems(other);
    if (ns == 0 || no == 0)
        return 0;
    ew_graph g = ew_graph_on(R->arch);
    const bool regbase = R->arch == 3510;
    const aclDataType sd = self->dtype, od = other->dtype, c = R->calc;
    int res;
    aclDataType res_dt = c;
    if (add_mixed(sd, od) && R->one_f) {
        int a = -1, b = -1;
        if (!regbase) {
            a = ew_contiguous_copy(&g, self);
            b = ew_contiguous_copy(&g, other);
        }
        res = elementwise_kernel(&g, R, true, a, b, n, ACL_FLOAT);
        res_dt = ACL_FLOAT;
    } else if (R->one && sd == c && od == c && regbase && add_aicore(sd, R->arch) &&
               add_aicore(od, R->arch)) {
        res = elementwise_kernel(&g, R, true, -1, -1, n, c);
    } else {
        const int a = ew_cast(&g, ew_contiguous_copy(&g, self), sd, c, ns);
        const int b = ew_cast(&g, ew_contiguous_copy(&g, other), od, c, no);
        if (R->one) {
            res = elementwise_kernel(&g, R, add_aicore(c, R->arch), a, b, n, c);
        } else if (R->axpy || R->axpy_v2) { /* their AI Core lists hold every dtype routed here */
            res = elementwise_kernel(&g, R, true, a, b, n, c);
        } else {
            const int scaled = elementwise_kernel(&g, R, mul_aicore(c, R->arch), b, -1, no, c);
            res = elementwise_kernel(&g, R, add_aicore(c, R->arch), a, scaled, n, c);
        }
    }
    ew_copy_out(&g, res, res_dt, out, n);
    return ew_size(&g);
}

/* aclnnAddsGetWorkspaceSize's graph: self read as it is (Ascend 950, self already of the
 * promoted dtype, both on AI Core, and alpha 1 or no Axpy for the dtype), else copied and
 * cast; other and alpha are host tensors (ConvertToTensor: no workspace); Add, Axpy, AxpyV2
 * or a one-element Mul and Add; the result cast to out's dtype (BOOL + True * True into
 * another dtype: cast to BOOL and back) and copied into out. */
static uint64_t adds_device_workspace(const add_route *R, const aclTensor *self,
                                      const aclTensor *out, uint64_t n) {
    if (n == 0)
        return 0;
    ew_graph g = ew_graph_on(R->arch);
    const aclDataType sd = self->dtype, c = R->calc;
    const bool view = sd == c && R->arch == 3510 && add_aicore(sd, R->arch) &&
                      (R->one || (!R->axpy && !R->axpy_v2));
    const int a = view ? -1 : ew_cast(&g, ew_contiguous_copy(&g, self), sd, c, n);
    int res;
    if (R->one) {
        res = elementwise_kernel(&g, R, add_aicore(c, R->arch), a, -1, n, c);
    } else if (R->axpy || R->axpy_v2) {
        res = elementwise_kernel(&g, R, true, a, -1, n, c);
    } else {
        const int scaled = elementwise_kernel(&g, R, mul_aicore(c, R->arch), -1, -1, 1, c);
        res = elementwise_kernel(&g, R, add_aicore(c, R->arch), a, scaled, n, c);
    }
    if (R->bool_fix) {
        res = ew_cast(&g, ew_cast(&g, res, c, out->dtype, n), out->dtype, ACL_BOOL, n);
        ew_copy_out(&g, res, ACL_BOOL, out, n);
    } else {
        ew_copy_out(&g, res, c, out, n);
    }
    return ew_size(&g);
}

/* ---- phase one ------------------------------------------------------------------------------ */

#define FAIL(code, ...)                \
    do {                               \
        aclemu_set_error(__VA_ARGS__); \
        return (code);                 \
    } while (0)

static void snapshot(adesc *d, const aclTensor *t, int out_nd) {
    d->dtype = t->dtype;
    d->es = (uint32_t)aclemu_dtype_size(t->dtype);
    d->data = t->data;
    d->offset = t->offset;
    d->ndim = (int)t->ndim;
    memcpy(d->dims, t->dims, t->ndim * sizeof(int64_t));
    memcpy(d->vstrides, t->strides, t->ndim * sizeof(int64_t));
    int shift = out_nd - (int)t->ndim;
    for (int k = 0; k < out_nd; k++) {
        int j = k - shift;
        d->strides[k] = j < 0 || t->dims[j] == 1 ? 0 : t->strides[j];
    }
}

typedef struct {
    const char *p1, *p2;
    const char *self_name;
    const aclemu_executor_ops *ops;
} add_names;

/* The common checks of aclnnAdd (and aclnnInplaceAdd, which calls it with out = selfRef)
 * and aclnnAdds, in the vendor's order; then the executor. other_s != NULL: Adds. */
static aclnnStatus add_phase1(const add_names *N, const aclTensor *self, const aclTensor *other,
                              const aclScalar *other_s, const aclScalar *alpha, aclTensor *out,
                              uint64_t *workspaceSize, aclOpExecutor **executor) {
    const char *P1 = N->p1;
    const char *self_name = N->self_name;
    bool adds = other == NULL && other_s != NULL;
    /* 0. the out-pointers, before anything else: the vendor's L2_DFX_PHASE_1 opens phase one
     * with them (hicann/opbase include/nnopbase/opdev/op_dfx.h -> src/nnopbase/composite_op/
     * aclnn_engine/op_dfx.cpp CheckPhase1Params: 161001) */
    if (!workspaceSize)
        FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: workspaceSize (out pointer) is NULL", P1);
    if (!executor)
        FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: executor (out pointer) is NULL", P1);
    /* 1. NULLs (the vendor: OP_CHECK_NULL self, other, alpha, out) */
    if (!self)
        FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: %s is NULL", P1, self_name);
    if (!other && !other_s)
        FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: other is NULL", P1);
    if (!alpha)
        FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: alpha is NULL", P1);
    if (!out)
        FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: out is NULL", P1);
    if (!aclemu_handle_check(self, ACLEMU_KIND_TENSOR))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s (%p) is not a live aclTensor", P1, self_name,
             (const void *)self);
    if (other && !aclemu_handle_check(other, ACLEMU_KIND_TENSOR))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: other (%p) is not a live aclTensor", P1,
             (const void *)other);
    if (other_s && !aclemu_handle_check(other_s, ACLEMU_KIND_SCALAR))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: other (%p) is not a live aclScalar", P1,
             (const void *)other_s);
    if (!aclemu_handle_check(alpha, ACLEMU_KIND_SCALAR))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: alpha (%p) is not a live aclScalar", P1,
             (const void *)alpha);
    if (!aclemu_handle_check(out, ACLEMU_KIND_TENSOR))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: out (%p) is not a live aclTensor", P1,
             (const void *)out);

    /* 2. self (and other) in the dtype list of this SoC */
    const aclemu_soc *soc = aclemu_soc_info(P1);
    if (!soc)
        return ACLNN_ERR_INNER; /* message set: ACL_EMU_SOC is not a known part */
    int arch = soc->npu_arch;
    bool regbase = arch == 3510;
    const char *list = arch == 2201 || arch == 3510
                           ? "FLOAT, INT32, INT64, FLOAT16, INT16, INT8, UINT8, DOUBLE, BOOL, "
                             "BF16, COMPLEX64, COMPLEX128"
                           : "FLOAT, INT32, INT64, FLOAT16, INT16, INT8, UINT8, DOUBLE, BOOL, "
                             "COMPLEX64, COMPLEX128";
    if (!add_dtype_ok(self->dtype, arch))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s is not supported on %s (%s)", P1,
             self_name, dname(self->dtype), soc->name, list);
    if (other && !add_dtype_ok(other->dtype, arch))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: other dtype %s is not supported on %s (%s)", P1,
             dname(other->dtype), soc->name, list);

    /* 3. promotion, alpha castable to it, and it castable to out */
    aclDataType other_dt = other ? other->dtype : other_s->dtype;
    aclDataType calc;
    if (!adds)
        calc = promote(self->dtype, other_dt);
    else if (regbase)
        calc = adds_promote_regbase(self->dtype, other_s, alpha);
    else
        calc = adds_promote(self->dtype, other_dt, out->dtype);
    if (calc == ACL_DT_UNDEFINED)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s and other dtype %s cannot be promoted "
             "to a common dtype", P1, self_name, dname(self->dtype), dname(other_dt));
    if (calc == ACL_BOOL ? !(is_integral(alpha->dtype) || alpha->dtype == ACL_BOOL)
                         : !can_cast(alpha->dtype, calc))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: alpha dtype %s cannot be cast to the promoted "
             "dtype %s", P1, dname(alpha->dtype), dname(calc));
    if (regbase) {
        if (!can_cast(self->dtype, calc) || !can_cast(other_dt, calc))
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s cannot be cast to the promoted "
                 "dtype %s", P1, can_cast(self->dtype, calc) ? "other" : self_name,
                 dname(can_cast(self->dtype, calc) ? other_dt : self->dtype), dname(calc));
        if (!add_dtype_ok(calc, arch))
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: the promoted dtype %s is not supported on %s "
                 "(%s)", P1, dname(calc), soc->name, list);
    }
    if (!can_cast(calc, out->dtype))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: the promoted dtype %s cannot be cast to out's "
             "dtype %s", P1, dname(calc), dname(out->dtype));

    /* 4. ranks, broadcasting, out's shape */
    char s1[256], s2[256], s3[256];
    if (self->ndim > MAX_RANK)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s rank %llu > %d", P1, self_name,
             (unsigned long long)self->ndim, MAX_RANK);
    if (other && other->ndim > MAX_RANK)
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: other rank %llu > %d", P1,
             (unsigned long long)other->ndim, MAX_RANK);
    int64_t bshape[MAX_RANK];
    int nd = (int)self->ndim;
    if (other) {
        nd = (int)(self->ndim > other->ndim ? self->ndim : other->ndim);
        for (int k = 0; k < nd; k++) {
            int i = k - (nd - (int)self->ndim), j = k - (nd - (int)other->ndim);
            int64_t a = i >= 0 ? self->dims[i] : 1, b = j >= 0 ? other->dims[j] : 1;
            if (a != b && a != 1 && b != 1) {
                fmt_dims(s1, sizeof s1, self->dims, self->ndim);
                fmt_dims(s2, sizeof s2, other->dims, other->ndim);
                FAIL(ACLNN_ERR_PARAM_INVALID, "%s: %s shape %s and other shape %s cannot "
                     "broadcast", P1, self_name, s1, s2);
            }
            bshape[k] = a == 1 ? b : a;
        }
    } else {
        memcpy(bshape, self->dims, self->ndim * sizeof(int64_t));
    }
    if ((int)out->ndim != nd || memcmp(out->dims, bshape, (size_t)nd * sizeof(int64_t)) != 0) {
        fmt_dims(s1, sizeof s1, bshape, (uint64_t)nd);
        fmt_dims(s3, sizeof s3, out->dims, out->ndim);
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: out shape should be %s, but is %s", P1, s1, s3);
    }

    add_payload *P = calloc(1, sizeof *P);
    if (!P)
        FAIL(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: out of host memory for the executor", P1);
    P->p2 = N->p2;
    P->names[A_SELF] = self_name;
    P->names[A_OTHER] = "other";
    P->names[A_OUT] = "out";
    P->nd = nd;
    memcpy(P->dims, bshape, (size_t)nd * sizeof(int64_t));
    P->n = 1;
    for (int k = 0; k < nd; k++)
        P->n *= bshape[k];
    snapshot(&P->t[A_SELF], self, nd);
    if (other)
        snapshot(&P->t[A_OTHER], other, nd);
    snapshot(&P->t[A_OUT], out, nd);
    if (adds) {
        P->other_is_scalar = true;
        /* converted here, as the vendor's ConvertToTensor(other, promoted dtype) does */
        P->other_calc = scalar_as(other_s, calc);
    }
    P->calc = calc;
    /* alpha == 1 is judged as the vendor's IsEqualToOne does: "neither > 1 nor < 1" on its
     * float value (so a NaN alpha, or a complex one with real part 1, adds other unscaled,
     * as on the device); on 3510 in double for a DOUBLE promotion, never for complex. */
    float alpha_f = (float)aclemu_scalar_to_double(alpha);
    double alpha_d = aclemu_scalar_to_double(alpha);
    bool one = !(alpha_f > 1.0f || alpha_f < 1.0f);
    if (regbase)
        one = is_complex(alpha->dtype) || is_complex(calc) ? false
              : calc == ACL_DOUBLE ? !(alpha_d > 1.0 || alpha_d < 1.0) : one;
    bool axpy = regbase ? calc == ACL_FLOAT || calc == ACL_FLOAT16 || calc == ACL_BF16
                        : calc == ACL_FLOAT || calc == ACL_FLOAT16 || calc == ACL_INT32;
    if (one) {
        P->path = PATH_ADD;
    } else if (axpy) {
        P->path = PATH_AXPY;
        P->alpha_f = alpha_f;
    } else {
        P->path = PATH_MUL_ADD;
        P->alpha = cast(scalar_num(alpha), alpha->dtype, calc);
    }
    P->bool_fix = adds && self->dtype == ACL_BOOL && other_s->dtype == ACL_BOOL &&
                  alpha->dtype == ACL_BOOL && out->dtype != ACL_BOOL &&
                  aclemu_scalar_to_int64(other_s) && aclemu_scalar_to_int64(alpha);
    /* owns P from here; keeps every tensor, as CANN's does (the in-place ones give selfRef
     * twice, as self and out: the same tensor recorded twice) */
    const add_route route = {arch, calc, one, !(alpha_f > 1.0f || alpha_f < 1.0f), axpy,
                             regbase && !axpy && axpy_v2_dtype(calc), P->bool_fix};
    const uint64_t ws = adds ? adds_device_workspace(&route, self, out, (uint64_t)P->n)
                             : add_device_workspace(&route, self, other, out, (uint64_t)P->n);
    const aclTensor *ts[A_COUNT] = {self, other, out};
    const char *names[A_COUNT] = {P->names[A_SELF], P->names[A_OTHER], P->names[A_OUT]};
    if (adds) { /* other is a scalar, not a tensor parameter */
        ts[A_OTHER] = out;
        names[A_OTHER] = P->names[A_OUT];
    }
    const uint64_t ntensors = adds ? 2 : 3;
    aclOpExecutor *ex = aclemu_executor_new(N->ops, P, ws, ts, names, ntensors, ntensors - 1);
    if (!ex)
        FAIL(ACLNN_ERR_INNER_CREATE_EXECUTOR, "%s: could not create the executor", P1);
    *workspaceSize = ws;
    *executor = ex;
    return ACLNN_SUCCESS;
}

static const add_names ADD_N = {"aclnnAddGetWorkspaceSize", "aclnnAdd", "self", &ADD_OPS};
static const add_names ADDS_N = {"aclnnAddsGetWorkspaceSize", "aclnnAdds", "self", &ADDS_OPS};
static const add_names IADD_N = {"aclnnInplaceAddGetWorkspaceSize", "aclnnInplaceAdd",
                                 "selfRef", &IADD_OPS};
static const add_names IADDS_N = {"aclnnInplaceAddsGetWorkspaceSize", "aclnnInplaceAdds",
                                  "selfRef", &IADDS_OPS};

ACLEMU_EXPORT aclnnStatus aclnnAddGetWorkspaceSize(const aclTensor *self,
                                                   const aclTensor *other,
                                                   const aclScalar *alpha, aclTensor *out,
                                                   uint64_t *workspaceSize,
                                                   aclOpExecutor **executor) {
    if (aclemu_fault(ADD_N.p1))
        return ACLNN_ERR_INNER;
    return add_phase1(&ADD_N, self, other, NULL, alpha, out, workspaceSize, executor);
}

ACLEMU_EXPORT aclnnStatus aclnnAddsGetWorkspaceSize(const aclTensor *self,
                                                    const aclScalar *other,
                                                    const aclScalar *alpha, aclTensor *out,
                                                    uint64_t *workspaceSize,
                                                    aclOpExecutor **executor) {
    if (aclemu_fault(ADDS_N.p1))
        return ACLNN_ERR_INNER;
    return add_phase1(&ADDS_N, self, NULL, other, alpha, out, workspaceSize, executor);
}

ACLEMU_EXPORT aclnnStatus aclnnInplaceAddGetWorkspaceSize(const aclTensor *selfRef,
                                                          const aclTensor *other,
                                                          const aclScalar *alpha,
                                                          uint64_t *workspaceSize,
                                                          aclOpExecutor **executor) {
    const char *P1 = IADD_N.p1;
    if (aclemu_fault(P1))
        return ACLNN_ERR_INNER;
    /* The vendor checks these first (CheckInplace): NULLs, then that other broadcasts to
     * selfRef's own shape. */
    if (!selfRef)
        FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: selfRef is NULL", P1);
    if (!other)
        FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s: other is NULL", P1);
    if (!aclemu_handle_check(selfRef, ACLEMU_KIND_TENSOR))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: selfRef (%p) is not a live aclTensor", P1,
             (const void *)selfRef);
    if (!aclemu_handle_check(other, ACLEMU_KIND_TENSOR))
        FAIL(ACLNN_ERR_PARAM_INVALID, "%s: other (%p) is not a live aclTensor", P1,
             (const void *)other);
    if (selfRef->ndim <= MAX_RANK && other->ndim <= MAX_RANK) {
        int nd = (int)(selfRef->ndim > other->ndim ? selfRef->ndim : other->ndim);
        bool ok = (int)selfRef->ndim == nd;
        for (int k = 0; ok && k < nd; k++) {
            int j = k - (nd - (int)other->ndim);
            int64_t a = selfRef->dims[k], b = j >= 0 ? other->dims[j] : 1;
            ok = b == a || b == 1;
        }
        if (!ok) {
            char s1[256], s2[256];
            fmt_dims(s1, sizeof s1, selfRef->dims, selfRef->ndim);
            fmt_dims(s2, sizeof s2, other->dims, other->ndim);
            FAIL(ACLNN_ERR_PARAM_INVALID, "%s: other shape %s does not broadcast to selfRef "
                 "shape %s", P1, s2, s1);
        }
    }
    return add_phase1(&IADD_N, selfRef, other, NULL, alpha, (aclTensor *)selfRef,
                      workspaceSize, executor);
}

ACLEMU_EXPORT aclnnStatus aclnnInplaceAddsGetWorkspaceSize(const aclTensor *selfRef,
                                                           const aclScalar *other,
                                                           const aclScalar *alpha,
                                                           uint64_t *workspaceSize,
                                                           aclOpExecutor **executor) {
    if (aclemu_fault(IADDS_N.p1))
        return ACLNN_ERR_INNER;
    return add_phase1(&IADDS_N, selfRef, NULL, other, alpha, (aclTensor *)selfRef,
                      workspaceSize, executor);
}

#define PHASE2(name)                                                                          \
    ACLEMU_EXPORT aclnnStatus name(void *workspace, uint64_t workspaceSize,                   \
                                   aclOpExecutor *executor, aclrtStream stream) {             \
        return aclemu_executor_run(#name, executor, workspace, workspaceSize, stream);        \
    }
PHASE2(aclnnAdd)
PHASE2(aclnnAdds)
PHASE2(aclnnInplaceAdd)
PHASE2(aclnnInplaceAdds)
