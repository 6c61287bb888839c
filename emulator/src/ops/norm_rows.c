/*
 * The task of every operator on norm_rows.h: its launch (phase two, after aclemu_executor_run's
 * executor and workspace checks), its run around the operator's row kernel, its release.
 * norm_rows.h says what an operator supplies.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"
#include "norm_rows.h"
#include "phase_one.h"
#include "tensor_view.h"

/* A launch's own copy of the payload, and its run's buffers and pins. */
typedef struct {
    norm_rows rows;
    max_align_t payload[]; /* kernel->payload_size bytes, nr_head first */
} nr_task;

static const nr_head *task_head(const nr_task *T)
{
    return (const nr_head *)(const void *)T->payload;
}

static void task_rows(void *ctx, int64_t chunk, int64_t begin, int64_t end)
{
    const nr_task *T = ctx;
    task_head(T)->kernel->rows(T->payload, &T->rows, chunk, begin, end);
}

static void task_run(void *arg)
{
    nr_task *T = arg;
    const nr_head *H = task_head(T);
    const nr_kernel *K = H->kernel;
    if (!K->before_rows(T->payload, &T->rows) || T->rows.nchunks == 0)
        return;
    aclemu_parallel_for(H->rows, T->rows.nchunks, task_rows, T);
    if (K->after_rows)
        K->after_rows(T->payload, &T->rows);
}

/* Unpins the run's memory, frees its buffers and the task. */
static void task_release(void *arg)
{
    nr_task *T = arg;
    norm_rows *R = &T->rows;
    for (int i = 0; i < R->npins; i++)
        aclemu_device_unpin(R->pins[i]);
    free(R->gamma_buf);
    free(R->row_buf);
    free(R->run_buf);
    free(T);
}

/* The task over a copy of the payload, its tensors at the run's addresses; for rows and
 * width > 0 the buffers (row_floats per chunk; gamma's and beta's); then the views checked,
 * pinned and the task queued (views_launch). On failure the message is set and the task
 * released; the executor's payload is untouched either way. */
aclnnStatus nr_task_launch(void *payload, void *const *addrs, void *workspace,
                           uint64_t workspace_size, aclrtStream stream)
{
    (void)workspace_size;
    const nr_head *H = payload;
    const nr_kernel *K = H->kernel;
    nr_task *T = p2_task_new(H->call, sizeof *T + K->payload_size);
    if (!T)
        return ACLNN_ERR_INNER;
    memcpy(T->payload, payload, K->payload_size);
    tdesc *t = (tdesc *)(void *)((char *)T->payload + K->tensors_at);
    const tdesc *views[TV_MAX_VIEWS];
    for (int i = 0; i < K->ntensors; i++) {
        t[i].data = addrs[i];
        views[i] = &t[i];
    }
    norm_rows *R = &T->rows;
    if (H->rows > 0 && H->width > 0) {
        R->nchunks = H->rows < NR_MAX_CHUNKS ? H->rows : NR_MAX_CHUNKS;
        R->row_floats = H->row_floats;
        R->row_buf = malloc((size_t)(R->nchunks * H->row_floats) * sizeof(float));
        R->gamma_buf = malloc((size_t)(2 * H->width) * sizeof(float));
        if (H->run_floats > 0)
            R->run_buf = malloc((size_t)H->run_floats * sizeof(float));
        if (!R->row_buf || !R->gamma_buf || (H->run_floats > 0 && !R->run_buf)) {
            aclemu_set_error("%s: out of host memory for the row buffers (%lld floats)",
                             H->call, (long long)(R->nchunks * H->row_floats + 2 * H->width +
                                                  H->run_floats));
            task_release(T);
            return ACLNN_ERR_INNER;
        }
    }
    return views_launch(H->call, stream, views, H->names, K->ntensors, workspace, 0, R->pins,
                        &R->npins, H->no_kernel ? NULL : task_run, task_release, T);
}
