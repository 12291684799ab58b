/*
 * Training-step throughput of perfcast (the perfcast side of run_train.sh).
 *
 *   bench_train MODEL.safetensors DATA_DIR COLLECTION THREADS CONFIGS WARMUP STEPS
 *
 * Loads a checkpoint written by `perfcast train` (only for its fitted
 * preprocessing and starting parameters: the PyTorch side reads the same
 * file), loads the collection's train graphs and preprocesses them (untimed),
 * then runs the training step of src/train/train_loop.c exactly: per step one
 * graph (shuffled order), K configs sampled without replacement, config
 * gather + preprocessing, forward, combo loss (tile: ListMLE T=10 + 0.02
 * MSE; layout: pairwise hinge margin 0.1), zero_grad, backward, gradient
 * clipping at 1, cosine LR, AdamW (wd 1e-4). WARMUP steps are run first and
 * not timed; the next STEPS are timed as a whole (wall clock). Validation is
 * not run. Prints one line: perfcast <coll> steps samples seconds samples/s.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gnn/gnn.h"
#include "common/threads.h"
#include "common/util.h"
#include "nn/nn.h"
#include "perfcast/dataset.h"
#include "train/train.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}


typedef struct tg {
    pc_graph *g;
    pc_gnn_gdata d;
    int64_t c;
    double *y;
} tg;

static void die(const pc_error *e, const char *what) {
    fprintf(stderr, "bench_train: %s: %s\n", what, e->msg);
    exit(1);
}

int main(int argc, char **argv) {
    if (argc != 8) {
        fprintf(stderr, "usage: bench_train MODEL DATA COLLECTION THREADS CONFIGS WARMUP STEPS\n");
        return 2;
    }
    const char *model_path = argv[1], *data = argv[2], *cname = argv[3];
    int threads = atoi(argv[4]), configs = atoi(argv[5]);
    long warm = atol(argv[6]), steps = atol(argv[7]);
    pc_nn_blas_single();
    pc_threads_begin(threads); /* for the whole run */
    pc_error err;
    pc_error_clear(&err);
    pc_gnn *m = NULL;
    int coll = -1;
    if (pc_ckpt_load(model_path, PC_MEMORY_AUTO, &m, &coll, &err)) die(&err, model_path);
    if (coll != pc_collection_find(cname)) {
        fprintf(stderr, "bench_train: checkpoint is not for %s\n", cname);
        return 1;
    }
    pc_dataset *ds = NULL;
    if (pc_dataset_open(data, &ds, &err)) die(&err, data);
    int sp = pc_split_find("train");
    size_t n = pc_dataset_num_files(ds, coll, sp);
    tg *v = calloc(n, sizeof *v);
    pc_load_opts lo = pc_load_opts_default();
    lo.kind = pc_collection_kind(coll);
    int64_t maxc = 1, maxrows = 1;
    for (size_t i = 0; i < n; i++) {
        if (pc_graph_load(pc_dataset_file(ds, coll, sp, i), &lo, &v[i].g, &err)) die(&err, "load");
        if (pc_gnn_gdata_build(m, v[i].g, &v[i].d, &err)) die(&err, "gdata");
        v[i].c = pc_graph_num_configs(v[i].g);
        const int64_t *rt = pc_graph_config_runtime(v[i].g);
        const int64_t *nz = pc_graph_runtime_normalizers(v[i].g);
        v[i].y = malloc((size_t)(v[i].c + 1) * sizeof(double));
        for (int64_t k = 0; k < v[i].c; k++)
            v[i].y[k] = nz && nz[k] > 0 ? (double)rt[k] / (double)nz[k] : (double)rt[k];
        if (v[i].c > maxc) maxc = v[i].c;
        int64_t nc = lo.kind == PC_KIND_TILE ? 1 : pc_graph_num_config_nodes(v[i].g);
        if (nc * configs > maxrows) maxrows = nc * configs;
    }
    int tile = m->opts.kind == PC_KIND_TILE;
    int D0 = tile ? PC_TILE_CONFIG_DIM : PC_LAYOUT_CONFIG_DIM;
    float *raw = malloc((size_t)maxrows * D0 * sizeof(float));
    float *cfg = malloc((size_t)maxrows * m->cfg_dim * sizeof(float));
    float *s = malloc((size_t)configs * sizeof(float)), *dsc = malloc((size_t)configs * sizeof(float));
    int64_t *perm = malloc((size_t)maxc * sizeof *perm), *ids = malloc((size_t)configs * sizeof *ids);
    double *yk = malloc((size_t)configs * sizeof(double));
    size_t *order = malloc(n * sizeof *order);
    pc_gnn_ws *ws = pc_gnn_ws_new();

    pc_loss_cfg lc = pc_loss_cfg_default();
    if (!tile) {
        lc.w_listmle = 0;
        lc.w_hinge = 1;
        lc.w_mse = 0;
        lc.hinge_margin = 0.1f;
        lc.hinge_temperature = 1;
    }
    pc_adam_cfg ac = pc_adam_cfg_default();
    ac.decoupled = 1;
    ac.weight_decay = 1e-4f;
    long total = warm + steps, warmup = (long)n < total / 10 ? (long)n : total / 10;
    if (warmup < 1) warmup = 1;
    uint64_t rng = 1 ^ 0x5eedf00dULL;
    size_t oi = n;
    double t0 = 0, lsum = 0;
    long samples = 0;
    for (long step = 0; step < total; step++) {
        if (step == warm) {
            t0 = now_s();
            samples = 0;
            lsum = 0;
        }
        tg *t;
        do {
            if (oi == n) {
                for (size_t i = 0; i < n; i++) order[i] = i;
                for (size_t i = n; i > 1; i--) {
                    size_t j = (size_t)(pc_splitmix64(&rng) % i), tmp = order[i - 1];
                    order[i - 1] = order[j];
                    order[j] = tmp;
                }
                oi = 0;
            }
            t = &v[order[oi++]];
        } while (t->c < 2);
        int K = (int)(t->c < configs ? t->c : configs);
        for (int64_t k = 0; k < t->c; k++) perm[k] = k;
        for (int k = 0; k < K; k++) {
            int64_t j = k + (int64_t)(pc_splitmix64(&rng) % (uint64_t)(t->c - k));
            int64_t tmp = perm[k];
            perm[k] = perm[j];
            perm[j] = tmp;
            ids[k] = perm[k];
            yk[k] = t->y[perm[k]];
        }
        if (tile) {
            const float *cf = pc_graph_config_feat(t->g);
            for (int k = 0; k < K; k++)
                memcpy(raw + (size_t)k * D0, cf + ids[k] * D0, (size_t)D0 * sizeof(float));
            pc_gnn_prep_configs(m, NULL, raw, K, cfg, NULL);
        } else {
            int64_t rows = (int64_t)K * pc_graph_num_config_nodes(t->g);
            if (pc_graph_config_feat_gather(t->g, ids, K, raw, &err)) die(&err, "gather");
            pc_gnn_prep_configs(m, NULL, raw, rows, cfg, NULL);
        }
        if (pc_gnn_forward(m, ws, &t->d.g, cfg, K, NULL, s, &err)) die(&err, "forward");
        memset(dsc, 0, (size_t)K * sizeof(float));
        double L = pc_loss_combo(dsc, s, yk, K, &lc, 1.0f, NULL);
        if (!isfinite(L)) {
            fprintf(stderr, "bench_train: loss not finite\n");
            return 1;
        }
        pc_params_zero_grad(&m->params);
        if (pc_gnn_backward(m, ws, dsc, &err)) die(&err, "backward");
        pc_clip_grad_norm(m->params.grad, m->params.numel, 1.0f);
        float lr = pc_lr_cosine(step, 1e-3f, 1e-3f * 0.05f, warmup, total);
        pc_params_adam_step(&m->params, &ac, step + 1, lr);
        samples += K;
        lsum += L;
    }
    double dt = now_s() - t0;
    printf("perfcast %s threads %d steps %ld samples %ld seconds %.4f samples_per_s %.1f "
           "mean_loss %.4f\n",
           cname, threads, steps, samples, dt, (double)samples / dt, lsum / (double)steps);
    for (size_t i = 0; i < n; i++) {
        pc_gnn_gdata_free(&v[i].d);
        pc_graph_free(v[i].g);
        free(v[i].y);
    }
    free(v);
    free(raw);
    free(cfg);
    free(s);
    free(dsc);
    free(perm);
    free(ids);
    free(yk);
    free(order);
    pc_gnn_ws_free(ws);
    pc_gnn_free(m);
    pc_dataset_close(ds);
    return 0;
}
