/*
 * The parameter arena, gradient clipping, Adam/AdamW and the learning-rate
 * schedule. See nn.h.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/threads.h"
#include "common/util.h"
#include "nn/nn.h"

/* ---- parameter arena ---------------------------------------------------- */

void pc_params_init(pc_params *p) { memset(p, 0, sizeof *p); }

static pc_status param_numel(const char *name, int ndim, const int *shape, size_t *numel,
                             pc_error *err) {
    if (ndim < 1 || ndim > PC_PARAM_MAX_DIMS)
        return pc_fail(err, PC_ERR_ARG, "params: %s has ndim %d, expected 1..%d", name, ndim,
                       PC_PARAM_MAX_DIMS);
    uint64_t n = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] <= 0 || !pc_mul_u64(n, (uint64_t)shape[d], &n))
            return pc_fail(err, PC_ERR_RANGE, "params: %s has bad shape[%d] = %d", name, d,
                           shape[d]);
    }
    *numel = (size_t)n;
    return PC_OK;
}

/* FNV-1a of a parameter name. */
static uint32_t name_hash(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static void slot_put(int *slot, int nslot, const char *name, int i) {
    uint32_t k = name_hash(name) & (uint32_t)(nslot - 1);
    while (slot[k] >= 0) k = (k + 1) & (uint32_t)(nslot - 1);
    slot[k] = i;
}

/* Room in the name index for one more entry (kept at most half full). */
static int index_grow(pc_params *p) {
    if (2 * (p->count + 1) <= p->nslot) return 1;
    int n = p->nslot ? 2 * p->nslot : 32;
    int *slot = malloc((size_t)n * sizeof *slot);
    if (!slot) return 0;
    for (int k = 0; k < n; k++) slot[k] = -1;
    for (int i = 0; i < p->count; i++) slot_put(slot, n, p->info[i].name, i);
    free(p->slot);
    p->slot = slot;
    p->nslot = n;
    return 1;
}

pc_status pc_params_add(pc_params *p, const char *name, int ndim, const int *shape, int *index,
                        pc_error *err) {
    if (p->data) return pc_fail(err, PC_ERR_ARG, "params: %s added after alloc", name);
    if (strlen(name) >= PC_PARAM_NAME_MAX)
        return pc_fail(err, PC_ERR_ARG, "params: name too long: %s", name);
    if (pc_params_find(p, name) >= 0)
        return pc_fail(err, PC_ERR_ARG, "params: %s registered twice", name);
    size_t numel = 0;
    pc_status st = param_numel(name, ndim, shape, &numel, err);
    if (st) return st;
    if (!index_grow(p)) return pc_fail(err, PC_ERR_NOMEM, "params: out of memory");
    if (p->count == p->cap) {
        int cap = p->cap ? 2 * p->cap : 16;
        pc_param_info *info = realloc(p->info, (size_t)cap * sizeof *info);
        if (!info) return pc_fail(err, PC_ERR_NOMEM, "params: out of memory");
        p->info = info;
        p->cap = cap;
    }
    pc_param_info *t = &p->info[p->count];
    memset(t, 0, sizeof *t);
    strcpy(t->name, name);
    t->ndim = ndim;
    memcpy(t->shape, shape, (size_t)ndim * sizeof(int));
    t->offset = p->numel;
    t->numel = numel;
    p->numel += numel;
    slot_put(p->slot, p->nslot, t->name, p->count);
    if (index) *index = p->count;
    p->count++;
    return PC_OK;
}

pc_status pc_params_alloc(pc_params *p, pc_error *err) {
    if (p->data) return pc_fail(err, PC_ERR_ARG, "params: allocated twice");
    uint64_t n = p->numel ? p->numel : 1;
    p->data = pc_calloc_array(n, sizeof(float));
    p->grad = pc_calloc_array(n, sizeof(float));
    p->m = pc_calloc_array(n, sizeof(float));
    p->v = pc_calloc_array(n, sizeof(float));
    if (!p->data || !p->grad || !p->m || !p->v) {
        free(p->data);
        free(p->grad);
        free(p->m);
        free(p->v);
        p->data = p->grad = p->m = p->v = NULL;
        return pc_fail(err, PC_ERR_NOMEM, "params: out of memory for %zu floats (x4)", p->numel);
    }
    return PC_OK;
}

void pc_params_free(pc_params *p) {
    if (!p) return;
    free(p->info);
    free(p->slot);
    free(p->data);
    free(p->grad);
    free(p->m);
    free(p->v);
    memset(p, 0, sizeof *p);
}

int pc_params_find(const pc_params *p, const char *name) {
    if (!p->nslot) return -1;
    uint32_t k = name_hash(name) & (uint32_t)(p->nslot - 1);
    for (; p->slot[k] >= 0; k = (k + 1) & (uint32_t)(p->nslot - 1))
        if (strcmp(p->info[p->slot[k]].name, name) == 0) return p->slot[k];
    return -1;
}

float *pc_params_data(const pc_params *p, int index) {
    return p->data + p->info[index].offset;
}

float *pc_params_grad(const pc_params *p, int index) {
    return p->grad + p->info[index].offset;
}

void pc_params_zero_grad(pc_params *p) {
    if (p->grad) memset(p->grad, 0, p->numel * sizeof(float));
}

/* ---- clipping --------------------------------------------------------------- */

/*
 * The sum of squares is a single serial double loop: a parallel reduction
 * would make the norm (and so every update) depend on the thread count.
 */
double pc_clip_grad_norm(float *grad, size_t n, float max_norm) {
    double ss = 0.0;
    for (size_t i = 0; i < n; i++) ss += (double)grad[i] * grad[i];
    double norm = sqrt(ss);
    if (norm > max_norm && norm > 0.0) {
        float scale = (float)(max_norm / norm);
#pragma omp parallel for schedule(static) if(n >= PC_PAR_MIN) num_threads(pc_threads())
        for (size_t i = 0; i < n; i++) grad[i] *= scale;
    }
    return norm;
}

/* ---- Adam / AdamW ----------------------------------------------------------- */

pc_adam_cfg pc_adam_cfg_default(void) {
    pc_adam_cfg c = {.beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.0f,
                     .decoupled = 0};
    return c;
}

void pc_adam_step(float *param, const float *grad, float *m, float *v, size_t n,
                  const pc_adam_cfg *cfg, long t, float lr) {
    float b1 = cfg->beta1, b2 = cfg->beta2, wd = cfg->weight_decay;
    // bias corrections in double: b^t underflows gracefully and 1 - b^t keeps its digits
    float c1 = (float)(1.0 - pow(b1, (double)t));
    float c2 = (float)(1.0 - pow(b2, (double)t));
    int decoupled = cfg->decoupled;
#pragma omp parallel for schedule(static) if(n >= PC_PAR_MIN) num_threads(pc_threads())
    for (size_t i = 0; i < n; i++) {
        float g = grad[i];
        if (!decoupled) g += wd * param[i]; // Adam: L2 term enters the moments
        m[i] = b1 * m[i] + (1.0f - b1) * g;
        v[i] = b2 * v[i] + (1.0f - b2) * g * g;
        float mhat = m[i] / c1, vhat = v[i] / c2;
        float step = mhat / (sqrtf(vhat) + cfg->eps);
        if (decoupled) step += wd * param[i]; // AdamW: decay bypasses the moments
        param[i] -= lr * step;
    }
}

void pc_params_adam_step(pc_params *p, const pc_adam_cfg *cfg, long t, float lr) {
    pc_adam_step(p->data, p->grad, p->m, p->v, p->numel, cfg, t, lr);
}

/* ---- schedule ------------------------------------------------------------------ */

float pc_lr_cosine(long step, float base_lr, float min_lr, long warmup, long total) {
    if (step < warmup) return base_lr * (float)(step + 1) / (float)warmup;
    if (step >= total || total <= warmup) return min_lr;
    double progress = (double)(step - warmup) / (double)(total - warmup);
    double coeff = 0.5 * (1.0 + cos(3.14159265358979323846 * progress));
    return (float)(min_lr + coeff * (base_lr - min_lr));
}
