/* The quarantine of released operator objects (see meta_internal.h). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta_internal.h"

#define DEPTH 256

typedef struct {
    void *p;
    meta_q_reason why;
    char op[64];
} qent;

typedef struct {
    qent e[DEPTH];
    size_t head, n;
} ring;

static pthread_mutex_t g_q_mu = PTHREAD_MUTEX_INITIALIZER;
static ring g_exec, g_other; /* separate, so tensor churn cannot push executors out early */

void meta_quarantine(void *p, meta_q_reason why, const char *op_name) {
    ring *r = why == Q_OTHER ? &g_other : &g_exec;
    void *evict = NULL;
    pthread_mutex_lock(&g_q_mu);
    if (r->n == DEPTH) {
        evict = r->e[r->head].p;
        r->head = (r->head + 1) % DEPTH;
        r->n--;
    }
    qent *q = &r->e[(r->head + r->n) % DEPTH];
    q->p = p;
    q->why = why;
    snprintf(q->op, sizeof q->op, "%s", op_name ? op_name : "");
    r->n++;
    pthread_mutex_unlock(&g_q_mu);
    free(evict);
}

bool meta_quarantined_executor(const void *p, char *op, size_t cap, meta_q_reason *why) {
    bool found = false;
    pthread_mutex_lock(&g_q_mu);
    for (size_t i = 0; i < g_exec.n && !found; i++) {
        qent *q = &g_exec.e[(g_exec.head + i) % DEPTH];
        if (q->p == p) {
            snprintf(op, cap, "%s", q->op);
            *why = q->why;
            found = true;
        }
    }
    pthread_mutex_unlock(&g_q_mu);
    return found;
}

__attribute__((destructor)) static void quarantine_fini(void) {
    pthread_mutex_lock(&g_q_mu);
    ring *rs[2] = {&g_exec, &g_other};
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < rs[k]->n; i++)
            free(rs[k]->e[(rs[k]->head + i) % DEPTH].p);
        rs[k]->n = rs[k]->head = 0;
    }
    pthread_mutex_unlock(&g_q_mu);
}
