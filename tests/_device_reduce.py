"""NumPy models of the device's vector reductions, row-wise over float32 arrays, every add one
float32 rounding: the emulator's kernels model them in emulator/src/ops/norm_rows.h and the
operator tests compare bits against these.

- ``fold64``: one repeat's reduction over 64 float lanes (vcadd: WholeReduceSum, ReduceSum
  within a repeat, Ascend 950's Reduce), the binary tree of adjacent lanes that the Ascend C
  ReduceSum reference describes (lanes 0 + 1, 2 + 3, ..., then those sums pairwise);
- ``reduce_sum_count``: Atlas A2/A3's ReduceSum over the first n elements (counter mode): each
  64-element repeat folded, the repeats' results added in order from +0;
- ``reduce_sum_count_m200``: the Atlas inference parts' ReduceSum over the first n elements
  (asc-devkit dav_m200): the whole repeats folded, their results folded 64 at a time, those
  folded again when there are several; a partial last repeat folded alone, then the pair;
- ``half_interval_sum``: ops-nn reduce_common.h ReduceSumHalfInterval;
- ``lane_blocks_sum``: ops-nn reduce_common.h ReduceSumMultiN;
- ``binary_sum``: Ascend 950's binary add (norm_rows.h nr_binary_add_sum): add_layer_norm_quant's
  VFCalcMeanVar, layer_norm_v4's two_pass_perf template; ``fold_partials`` its last steps;
- ``dichotomy_sum``: the transpose templates' DoReduce over a lane's rows (norm_rows.h
  nr_dichotomy_sum): layer_norm_v4's and layer_norm_grad_v3's;
- ``binary_fold_dot``, ``rows_binary_sum``: Ascend 950's GroupNormGrad (norm_rows.h
  nr_binary_fold_dot, nr_rows_binary_sum): the arch35 kernels' channel and group sums with
  their fused pair, and their stage-two sum over the workspace rows;
- ``split_chunk_sum``, ``regbase_row_sum``, ``split_sums``: Ascend 950's chunked sums of
  squares (norm_rows.h nr_regbase_chunk_sum, nr_regbase_row_sum, nr_regbase_split_sum):
  norm_common's ReduceSumRstd and its 256-entry levels, RmsNorm's ComputeFormerImplV2.
"""
from __future__ import annotations

import numpy as np

F32 = np.float32
LANES = 64


def fold64(v):
    """One repeat's reduction of [..., 64] float32 lanes (masked-off lanes passed as zeros)."""
    v = np.asarray(v, F32)
    assert v.shape[-1] == LANES, v.shape
    while v.shape[-1] > 1:
        v = v[..., 0::2] + v[..., 1::2]
    return v[..., 0]


def _lanes(t):
    """[M, n <= 64] float32 rows padded with zeros to 64 lanes."""
    t = np.asarray(t, F32)
    return np.pad(t, ((0, 0), (0, LANES - t.shape[1])))


def reduce_sum_count(t):
    """Atlas A2/A3's count-form ReduceSum of each row of float32 t [M, n]."""
    t = np.asarray(t, F32)
    acc = np.zeros(t.shape[0], F32)
    for i in range(0, t.shape[1], LANES):
        acc = acc + fold64(_lanes(t[:, i:i + LANES]))
    return acc


def reduce_sum_count_m200(t):
    """The Atlas inference parts' count-form ReduceSum of each row of float32 t [M, n]
    (asc-devkit kernel_operator_vec_reduce_intf_impl.h, dav_m200 ReduceSumImpl)."""
    t = np.asarray(t, F32)
    n = t.shape[1]
    if n < LANES:
        return fold64(_lanes(t))
    reps, tail = divmod(n, LANES)
    body = fold64(t[:, :LANES])
    if reps > 1:
        first = np.stack([fold64(t[:, r * LANES:(r + 1) * LANES]) for r in range(reps)], axis=1)
        second = np.stack([fold64(_lanes(first[:, k:k + LANES]))
                           for k in range(0, reps, LANES)], axis=1)
        body = second[:, 0] if second.shape[1] == 1 else fold64(_lanes(second))
    if tail:
        body = fold64(_lanes(np.stack([body, fold64(_lanes(t[:, reps * LANES:]))], axis=1)))
    return body


def half_interval_sum(t):
    """ReduceSumHalfInterval over each row of float32 t [M, n]: the part past the largest power
    of two added onto the front, halved down to 64 lanes, then one repeat's fold."""
    t = np.array(t, F32)
    n = t.shape[1]
    if n > LANES:
        body = 1 << (n.bit_length() - 1)
        t[:, :n - body] += t[:, body:n]
        while body > LANES:
            body //= 2
            t[:, :body] += t[:, body:2 * body]
        n = LANES
    return fold64(_lanes(t[:, :n]))


def lane_blocks_sum(t):
    """ReduceSumMultiN over each row of float32 t [M, n]: 64 lane accumulators from zero, lane
    l adding t[l], t[l + 64], ... in order, then one repeat's fold."""
    t = np.asarray(t, F32)
    lanes = np.zeros((t.shape[0], LANES), F32)
    for b in range(0, t.shape[1], LANES):
        w = min(LANES, t.shape[1] - b)
        lanes[:, :w] = t[:, b:b + w] + lanes[:, :w]
    return fold64(lanes)


def binary_sum(t):
    """Ascend 950's binary-add row sums of float32 terms t [M, N]: up to 64 columns one Reduce;
    else P the largest power of two below N, column P + j added onto column j, each register
    of the first P columns reduced, the partials folded by halves to one register, reduced."""
    m, n = t.shape
    if n <= 64:
        return fold64(np.pad(t, ((0, 0), (0, 64 - n))))
    p = 1
    while p * 2 < n:
        p *= 2
    head = t[:, :p].copy()
    head[:, :n - p] += t[:, p:]
    partial = np.stack([fold64(head[:, i:i + 64]) for i in range(0, p, 64)], axis=1)
    return fold_partials(partial)


def fold_partials(partial):
    """The binary add's last steps over float32 partials [M, count] (count a power of two):
    folded by halves of whole 64-lane registers down to one, reduced over its first lanes
    (norm_rows.h nr_binary_add_partials)."""
    partial = np.array(partial, F32)
    count = partial.shape[1]
    if count > 64:
        cur = count // 64 // 2
        while cur >= 1:
            partial[:, :cur * 64] += partial[:, cur * 64:2 * cur * 64]
            cur //= 2
        count = 64
    return fold64(np.pad(partial[:, :count], ((0, 0), (0, 64 - count))))


def binary_fold_dot(a, b=None):
    """Ascend 950's binary-fold sum of each row of a * b (b None: of a), float32 [M, n]
    (norm_rows.h nr_binary_fold_dot: group_norm_grad's arch35 channel and group sums): up to 64
    columns each product plus the +0 of the cleared accumulator, one Reduce; else P the largest
    power of two below n, column P + j folded onto column j (j's product rounded, then P + j's
    added to it fused; or the two terms added), the other columns alone, each register of the
    first P reduced, then fold_partials."""
    a = np.asarray(a, F32)
    prod = a if b is None else a * np.asarray(b, F32)
    n = a.shape[1]
    if n <= LANES:
        return fold64(np.pad(prod + F32(0), ((0, 0), (0, LANES - n))))
    p = 1
    while p * 2 < n:
        p *= 2
    head = prod[:, :p].copy()
    if b is None:
        head[:, :n - p] = head[:, :n - p] + a[:, p:]
    else:
        head[:, :n - p] = fma_f32(a[:, p:], np.asarray(b, F32)[:, p:], head[:, :n - p])
    partial = np.stack([fold64(head[:, i:i + LANES]) for i in range(0, p, LANES)], axis=1)
    return fold_partials(partial)


def rows_binary_sum(v):
    """Ascend 950's stage-two sum over the rows of float32 v [R, ...] (norm_rows.h
    nr_rows_binary_sum: group_norm_grad's arch35 reduceNMode1LessThan2/4/8, MoreThan8): R <= 2
    in order onto +0; R <= 4 and R <= 8 rows j + 2 (+ 4) onto row j, a missing row zeros, then
    pairwise; else P the largest power of two below R, row P + j onto row j in blocks of 8 (the
    rows alone past the paired blocks), ((t0 + t1) + (t2 + t3)) + ((t4 + t5) + (t6 + t7)) per
    block, the P / 8 block sums halved down to one."""
    v = np.asarray(v, F32)
    r = v.shape[0]
    zero = np.zeros(v.shape[1:], F32)

    def row(j):
        return v[j] if j < r else zero
    if r <= 2:
        s = zero
        for j in range(r):
            s = s + v[j]
        return s
    if r <= 4:
        return (v[0] + v[2]) + (v[1] + row(3))
    if r <= 8:
        return ((v[0] + v[4]) + (v[1] + row(5))) + ((v[2] + row(6)) + (v[3] + row(7)))
    p = 8
    while p < r:
        p *= 2
    p //= 2
    paired = (r - p + 7) // 8
    blocks = []
    for g in range(p // 8):
        t = [v[j] + row(p + j) if g < paired else v[j] for j in range(8 * g, 8 * g + 8)]
        blocks.append(((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7])))
    cur = len(blocks) // 2
    while cur >= 1:
        for j in range(cur):
            blocks[j] = blocks[j] + blocks[j + cur]
        cur //= 2
    return blocks[0]


def split_chunk_sum(q, power):
    """Ascend 950's chunk sum (norm_rows.h nr_regbase_chunk_sum: norm_common's ReduceSumRstd,
    RmsNorm's ComputeFormerImplV2, one arithmetic) over a zero-padded chunk of
    squares q [M, cal] with split `power`: register pairs past `power` onto the pairs as far
    in front, the rest of the front by pairs, each one Reduce into work; work folded 128 at a
    time (two registers, one Reduce) while it has 128; one Reduce of what is left."""
    cal = q.shape[1]
    rem = cal - power
    work = [fold64((q[:, a:a + 64] + q[:, power + a:power + a + 64]) +
                   (q[:, a + 64:a + 128] + q[:, power + a + 64:power + a + 128]))
            for a in range(0, rem - rem % 128, 128)]
    work += [fold64(q[:, a:a + 64] + q[:, a + 64:a + 128])
             for a in range(rem, rem + (power - rem) // 128 * 128, 128)]
    work = np.stack(work, axis=1)
    merges = power // 128 // 128
    if merges:
        work = np.stack([fold64(work[:, 128 * i:128 * i + 64] + work[:, 128 * i + 64:128 * i + 128])
                         for i in range(merges)], axis=1)
    return fold64(np.pad(work, ((0, 0), (0, 64 - work.shape[1]))))


def regbase_row_sum(sq, bx):
    """The quant operators' Ascend 950 normal kernels (norm_rows.h nr_regbase_row_sum): the
    squares sq [M, N] as one chunk padded with zeros to 512 bytes of x (bx bytes an element),
    split at the largest power of two up to that."""
    m, n = sq.shape
    per512 = 512 // bx
    q = np.zeros((m, -(-n // per512) * per512), F32)
    q[:, :n] = sq
    return split_chunk_sum(q, 1 << (q.shape[1].bit_length() - 1))


def split_sums(sq, bx, u, loop):
    """Ascend 950's split kernels' ComputeFormer (norm_rows.h nr_regbase_split_sum: RmsNorm's
    rms_norm_regbase_split_d.h with u the ubFactor, AddRmsNormQuant's and
    AddRmsNormDynamicQuant's _regbase_split_reduce.h with u the powerSplit): the
    row from its start as tailLoop pairs of u-chunks, the tail's pair, then single
    chunks; a pair's two sums one ComputeSum (a Reduce of two), each result a level-1 entry;
    256 entries merge (LevelMergeRstd: four quarters, then a Reduce) into level 2, and so
    on; the row's sum the merge of the lowest level holding entries."""
    m, n = sq.shape
    h = u // 2
    tail, tail_loops = (n - loop * u) % u, (n - loop * u) // u
    master = loop - tail_loops - (tail > 0)
    per512 = 512 // bx

    def chunk(off, count, power):
        q = np.zeros((m, -(-count // per512) * per512), F32)
        q[:, :count] = sq[:, off:off + count]
        return split_chunk_sum(q, power)

    def pair(a, b):
        return fold64(np.pad(np.stack([a, b], axis=1), ((0, 0), (0, 62))))

    def merge(level):
        return fold64((level[:, :64] + level[:, 64:128]) + (level[:, 128:192] + level[:, 192:]))
    steps = [(2 * u, lambda o: pair(chunk(o, u, u), chunk(o + u, u, u)))] * tail_loops
    if 0 < tail <= h:
        steps.append((u + tail, lambda o: pair(chunk(o, h + tail, h), chunk(o + h + tail, h, h))))
    elif tail > h:
        steps.append((u + tail, lambda o: pair(chunk(o, u, u), chunk(o + u, tail, h))))
    steps += [(u, lambda o: chunk(o, u, u))] * master
    levels, counts, off = np.zeros((3, m, 256), F32), [0, 0, 0], 0
    for width, step in steps:
        levels[0][:, counts[0]] = step(off)
        off += width
        counts[0] += 1
        for d in (0, 1):
            if counts[d] == 256:
                levels[d + 1][:, counts[d + 1]] = merge(levels[d])
                counts[d], counts[d + 1] = 0, counts[d + 1] + 1
    assert off == n
    return merge(levels[0 if counts[0] else 1 if counts[1] else 2])


def fma_f32(a, b, c):
    """float32 a * b + c with one rounding, elementwise (the vector unit's fused multiply-adds:
    Mula, MulDstAdd), for finite normal results: the product is exact in float64, the sum's
    float64 rounding error is found exactly (TwoSum) and breaks the tie when the float64 sum
    lands on a float32 midpoint (the one case where rounding twice differs from once)."""
    a, b, c = (np.asarray(v, F32).astype(np.float64) for v in (a, b, c))
    p = a * b
    s = p + c
    z = s - p
    err = (p - (s - z)) + (c - z)
    tie = (s.view(np.uint64) & np.uint64((1 << 29) - 1)) == np.uint64(1 << 28)
    s = np.where(tie & (err != 0), np.nextafter(s, s + err), s)
    return s.astype(F32)


def dichotomy_sum(v):
    """The transpose templates' DoReduce over each row of float32 v [M, N]: N == 1 plus +0;
    else the columns past the largest power of two P <= N added onto the first, then halved."""
    v = np.array(v, F32)
    n = v.shape[1]
    if n == 1:
        return v[:, 0] + F32(0)
    p = 1 << (n.bit_length() - 1)
    v[:, :n - p] = v[:, :n - p] + v[:, p:n]
    h = p // 2
    while h >= 1:
        v[:, :h] = v[:, :h] + v[:, h:2 * h]
        h //= 2
    return v[:, 0]
