/* The GNN's workspace: planning its two parts from the size table (see gnn_ws.h). */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/threads.h"
#include "gnn/gnn_ws.h"
#include "nn/nn.h"

/* Every buffer starts on a cache line. */
#define WS_ALIGN 64

/*
 * Blocks of 1 MiB and more are mapped and unmapped directly, not malloc'ed:
 * glibc raises its mmap threshold to the size of each mapped chunk that is
 * freed (up to 32 MiB), after which smaller allocations come from the heap,
 * which keeps freed memory resident; a re-planned part is such a chunk.
 * Measured on a layout training: peak RSS 5% above the per-buffer workspace
 * through malloc, 3% below it this way. Smaller blocks come from the heap,
 * whose reused pages save a one-graph `perfcast rank` its page faults.
 * Untouched pages of a block (buffers a pass does not use, growth slack)
 * cost no memory.
 */
#define WS_MAP_MIN ((size_t)1 << 20)

static void *block_map(size_t len) {
    if (len < WS_MAP_MIN) return aligned_alloc(WS_ALIGN, len);
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void pc_ws_block_free(void *block, size_t len) {
    if (!block) return;
    if (len < WS_MAP_MIN)
        free(block);
    else
        munmap(block, len);
}

static const size_t ws_elem[PC_WS_COUNT] = {
#define PC_WS_ELEM(type, name, stage, size) sizeof(type),
    PC_GNN_WS_BUFFERS(PC_WS_ELEM)
#undef PC_WS_ELEM
};

static const pc_gnn_ws_stage ws_stage[PC_WS_COUNT] = {
#define PC_WS_STAGE(type, name, stage, size) PC_WS_STAGE_##stage,
    PC_GNN_WS_BUFFERS(PC_WS_STAGE)
#undef PC_WS_STAGE
};

pc_gnn_ws *pc_gnn_ws_new(void) { return calloc(1, sizeof(pc_gnn_ws)); }

void pc_gnn_ws_free(pc_gnn_ws *ws) {
    if (!ws) return;
    pc_ws_block_free(ws->block[PC_WS_GRAPH], ws->block_len[PC_WS_GRAPH]);
    pc_ws_block_free(ws->block[PC_WS_CONFIGS], ws->block_len[PC_WS_CONFIGS]);
    free(ws);
}

static pc_gnn_ws_part part_of(pc_gnn_ws_stage s, int late) {
    return s == PC_WS_STAGE_PREFIX || (s == PC_WS_STAGE_GNN && late) ? PC_WS_GRAPH : PC_WS_CONFIGS;
}

/* Elements of every buffer for a pass of d: the table's expressions. */
static void ws_needs(const pc_gnn *m, const pc_gnn_ws_dims *d, size_t need[PC_WS_COUNT]) {
    const pc_gnn_opts *o = &m->opts;
    size_t n = d->n, nc = d->nc, K = d->K;
    size_t F = (size_t)m->feat_dim, E = (size_t)o->emb_dim, H = (size_t)o->hidden;
    size_t L = (size_t)o->layers, R = (size_t)pc_gnn_readout_width(m);
    size_t lay = o->kind == PC_KIND_LAYOUT, late = o->join == PC_JOIN_LATE;
    size_t mm = o->pool == PC_POOL_MEANMAX, arg = mm || o->pool == PC_POOL_MAX;
    size_t Pw = mm ? 2 * H : H;
    size_t S = late ? 1 : K, N = S * n, G = K > 1 ? K : 1;
    size_t ln = o->layernorm != 0, drop = d->train && o->dropout > 0.0f;
    size_t attn = o->attn_heads > 0;
    size_t tile_early = !lay && !late, lay_early = lay && !late, lay_late = lay && late;
    size_t fused = lay_late && d->fused, lay_batched = lay && !fused;
    size_t T = fused ? (size_t)pc_threads() : 0;
    size_t cache = 0, scratch = 0;
    if (attn && K > 0) { /* attention groups: attn_group configs each, or all K */
        int grp = (int)K < o->attn_group ? (int)K : o->attn_group;
        if ((int)K % grp == 0) {
            int Gs = (int)K / grp;
            cache = pc_cfg_attention_cache_size(Gs, grp, (int)R, o->attn_heads, 1);
            scratch = pc_cfg_attention_scratch_size(Gs, grp, (int)R, o->attn_heads, 1);
        }
    }
    int bwd = d->backward;
#define PC_WS_NEED(type, name, stage, size)                                                        \
    need[PC_WS_##name] = PC_WS_STAGE_##stage == PC_WS_STAGE_BACKWARD && !bwd ? 0 : (size_t)(size);
    PC_GNN_WS_BUFFERS(PC_WS_NEED)
#undef PC_WS_NEED
}

/* Points the buffers of `part` into its block (NULL: none). */
static void ws_point(pc_gnn_ws *ws, pc_gnn_ws_part part, int late, const size_t *off) {
    char *b = ws->block[part];
#define PC_WS_POINT(type, name, stage, size)                                                       \
    if (part_of(PC_WS_STAGE_##stage, late) == part)                                                \
        ws->name = b ? (type *)(void *)(b + off[PC_WS_##name]) : NULL;
    PC_GNN_WS_BUFFERS(PC_WS_POINT)
#undef PC_WS_POINT
}

/* Forgets both parts (a model whose GNN is shared differently plans the stages apart). */
static void ws_reset(pc_gnn_ws *ws) {
    pc_ws_block_free(ws->block[PC_WS_GRAPH], ws->block_len[PC_WS_GRAPH]);
    pc_ws_block_free(ws->block[PC_WS_CONFIGS], ws->block_len[PC_WS_CONFIGS]);
    ws->block[PC_WS_GRAPH] = ws->block[PC_WS_CONFIGS] = NULL;
    ws->block_len[PC_WS_GRAPH] = ws->block_len[PC_WS_CONFIGS] = 0;
    memset(ws->cap, 0, sizeof ws->cap);
    for (int late = 0; late < 2; late++) {
        ws_point(ws, PC_WS_GRAPH, late, NULL);
        ws_point(ws, PC_WS_CONFIGS, late, NULL);
    }
}

int pc_ws_plan_block(void **block, size_t *len, int count, const size_t *elem,
                     const uint8_t *member, const size_t *need, size_t *cap, size_t *off) {
    int grow = !*block;
    for (int i = 0; i < count; i++)
        if ((!member || member[i]) && need[i] > cap[i]) grow = 1;
    if (!grow) return 0;
    /* the old block goes first: its contents are not kept, and the peak stays one block */
    pc_ws_block_free(*block, *len);
    *block = NULL;
    *len = 0;
    size_t total = 0;
    int ok = 1;
    for (int i = 0; i < count; i++) {
        if (member && !member[i]) continue;
        size_t c = cap[i];
        if (need[i] + need[i] / 2 > c) c = need[i] + need[i] / 2;
        if (c > (SIZE_MAX / 4 - total) / elem[i]) ok = 0, c = 0;
        cap[i] = c;
        off[i] = total;
        total += (c * elem[i] + WS_ALIGN - 1) / WS_ALIGN * WS_ALIGN;
    }
    if (ok) *block = block_map(total ? total : WS_ALIGN);
    if (*block) {
        *len = total ? total : WS_ALIGN;
        return 1;
    }
    for (int i = 0; i < count; i++)
        if (!member || member[i]) cap[i] = 0;
    return -1;
}

int pc_gnn_ws_plan(const pc_gnn *m, pc_gnn_ws *ws, pc_gnn_ws_part part, const pc_gnn_ws_dims *d) {
    int late = m->opts.join == PC_JOIN_LATE;
    if (ws->planned_late && ws->planned_late != late + 1) ws_reset(ws);
    ws->planned_late = late + 1;
    size_t need[PC_WS_COUNT], off[PC_WS_COUNT] = {0};
    uint8_t member[PC_WS_COUNT];
    ws_needs(m, d, need);
    for (int i = 0; i < PC_WS_COUNT; i++) member[i] = part_of(ws_stage[i], late) == part;
    int r = pc_ws_plan_block(&ws->block[part], &ws->block_len[part], PC_WS_COUNT, ws_elem, member,
                             need, ws->cap, off);
    if (r) ws_point(ws, part, late, r > 0 ? off : NULL);
    return r;
}

/* Bytes of a part's block planned for d from empty: the planner's 1.5x, aligned. */
static double part_bytes(const pc_gnn *m, pc_gnn_ws_part part, const pc_gnn_ws_dims *d) {
    int late = m->opts.join == PC_JOIN_LATE;
    size_t need[PC_WS_COUNT];
    ws_needs(m, d, need);
    double total = 0;
    for (int i = 0; i < PC_WS_COUNT; i++) {
        if (part_of(ws_stage[i], late) != part) continue;
        double c = (double)(need[i] + need[i] / 2) * (double)ws_elem[i];
        total += ceil(c / WS_ALIGN) * WS_ALIGN;
    }
    return total > 0 ? total : WS_ALIGN;
}

double pc_gnn_ws_score_bytes(const pc_gnn *m, int64_t n, int64_t nc, int64_t K) {
    int fused = m->opts.kind == PC_KIND_LAYOUT && m->opts.join == PC_JOIN_LATE;
    pc_gnn_ws_dims g = {(size_t)n, (size_t)nc, 0, 0, 0, 0};
    pc_gnn_ws_dims c = {(size_t)n, (size_t)nc, (size_t)K, 0, 0, fused};
    return part_bytes(m, PC_WS_GRAPH, &g) + part_bytes(m, PC_WS_CONFIGS, &c);
}
