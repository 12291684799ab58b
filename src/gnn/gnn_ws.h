/*
 * The GNN's workspace (internal to src/gnn/): every activation a pass keeps
 * for backward and every scratch buffer, as one table of buffers with their
 * shapes, planned from the sizes of the pass, llm.c-style.
 *
 * Sizes, in elements, are written with:
 *   n   nodes of the graph         nc  its configurable nodes (layout, else 0)
 *   K   configs of the pass        S   segments the GNN runs over: 1 when it
 *   N   = S * n node rows              is shared by the configs (late join), else K
 *   G   = max(K, 1)                T   threads of the fused layout scoring
 *   F, E, H, L, R, Pw: node features, opcode embedding, hidden, layers,
 *   readout and pool widths (gnn.h); cache, scratch: the cross-config
 *   attention's (src/nn/attention.c).
 * and 0/1 factors for the paths a pass takes: ln (LayerNorm), drop (dropout
 * masks drawn), attn, mm (meanmax pooling), arg (max or meanmax pooling),
 * tile_early, lay_early, lay_late, fused (layout late join scored config by
 * config), lay_batched (layout without fused: the batched path).
 * A buffer a pass does not use has size 0.
 *
 * Stages say which pass writes a buffer and so which of the two allocations
 * holds it:
 *   PREFIX    the config-independent start of the forward: graph part
 *   GNN       the GNN and graph pooling: graph part when shared by the
 *             configs (late join), else configs part
 *   CONFIGS   the rest of the forward, per config: configs part
 *   BACKWARD  gradients: configs part, planned only for a backward
 * The graph part is planned by pc_gnn_prefix (and the forward), the configs
 * part by every pass over configs, so scoring chunks of configs of any size
 * against a prefix never discards it. A part is one allocation (large ones mapped,
 * see gnn_ws.c); when a pass needs more than it holds, the part is
 * re-planned: every buffer gets 1.5 x what the pass needs, or keeps its
 * size if larger (graphs of a training set differ in size, and a fresh
 * part costs page faults on first touch of all of it; slack that is never
 * touched costs no memory), the old allocation is released before the new
 * one is made, and the part's contents are not kept.
 *
 * Per-layer buffers are (L, N, ...): layer l's slice starts at l * N * width.
 */
#ifndef PC_GNN_WS_H
#define PC_GNN_WS_H

#include <stddef.h>
#include <stdint.h>

#include "gnn/gnn.h"

/* X(type, name, stage, elements) -- shape and meaning in the comment. */
// clang-format off
#define PC_GNN_WS_BUFFERS(X)                                                                      \
    /* the prefix: the graph's n nodes, before any config */                                      \
    X(float, emb, PREFIX, n * E)                    /* (n, E) opcode embeddings */                \
    X(float, x0, PREFIX, n * (F + E))               /* (n, F+E) [x || emb] */                     \
    X(float, base, PREFIX, n * H)                   /* (n, H) x0 @ in.w^T + in.b */               \
    X(float, cfg_node_h, PREFIX, lay_late * nc * H) /* (nc, H) h_L of the configurable nodes */   \
    X(float, late_proj, PREFIX, lay_late * nc * H)  /* (nc, H) cfg_node_h @ late.w^T */           \
    /* the GNN over S segments of n rows */                                                       \
    X(float, pre0, GNN, N * H)                      /* (N, H) base + the injected configs */      \
    X(float, h0, GNN, N * H)                        /* (N, H) act(pre0) */                        \
    X(float, ln_out, GNN, ln * L * N * H)           /* (L, N, H) z = LayerNorm(h_l) */            \
    X(float, ln_mean, GNN, ln * L * N)              /* (L, N) its row means */                    \
    X(float, ln_rstd, GNN, ln * L * N)              /* (L, N) its row 1/std */                    \
    X(float, agg_ops, GNN, L * N * H)               /* (L, N, H) mean of z over operands */       \
    X(float, agg_users, GNN, L * N * H)             /* (L, N, H) mean of z over users */          \
    X(float, cat, GNN, L * N * 3 * H)               /* (L, N, 3H) [z || agg_ops || agg_users] */  \
    X(float, upd_pre, GNN, L * N * H)               /* (L, N, H) cat @ W_l^T + b_l */             \
    X(float, upd, GNN, L * N * H)                   /* (L, N, H) act(upd_pre) */                  \
    X(float, upd_drop, GNN, drop * L * N * H)       /* (L, N, H) dropout(upd) */                  \
    X(uint8_t, drop_mask, GNN, drop * L * N * H)    /* (L, N, H) its kept elements */             \
    X(float, h, GNN, L * N * H)                     /* (L, N, H) h_{l+1} = h_l + the update */    \
    X(int32_t, seg_off, GNN, S + 1)                 /* (S+1) first row of each segment */         \
    X(float, pooled, GNN, S * Pw)                   /* (S, Pw) pool(h_L) per segment */           \
    X(float, pool_mean, GNN, mm * S * H)            /* (S, H) meanmax: the mean half */           \
    X(float, pool_max, GNN, mm * S * H)             /* (S, H) meanmax: the max half */            \
    X(int32_t, pool_arg, GNN, arg * S * H)          /* (S, H) row of each maximum */              \
    /* per config: the join, the readout and the head */                                          \
    X(float, cfg_proj, CONFIGS, tile_early * K * H + lay_batched * K * nc * H)                    \
                                                    /* tile (K, H), layout (K*nc, H): cfg @       \
                                                       cfg.w^T (+ cfg.b) */                       \
    X(int32_t, cfg_rows, CONFIGS, lay_early * K * nc)                                             \
                                                    /* (K*nc) the row of config k's node j in     \
                                                       the N rows */                              \
    X(float, cfg_gather, CONFIGS, lay_early * K * nc * H) /* (K*nc, H) h_L at cfg_rows */         \
    X(float, late_pre, CONFIGS, lay_batched * lay_late * K * nc * H)                              \
                                                    /* (K*nc, H) u = cfg_proj + late_proj, per    \
                                                       config */                                  \
    X(float, late_act, CONFIGS, lay_batched * lay_late * K * nc * H) /* (K*nc, H) act(u) */       \
    X(float, fused_scratch, CONFIGS, T * (3 * nc * H + 2 * H))                                    \
                                                    /* (T, 3*nc*H + 2H) per thread: one config's  \
                                                       cfg_proj, u, act(u), pooling halves */     \
    X(int32_t, fused_arg, CONFIGS, T * H)           /* (T, H) per thread: the pooling's argmax */ \
    X(int32_t, cfg_off, CONFIGS, lay * (K + 1))                                                   \
                                                    /* (K+1) first configurable-node row of each  \
                                                       config */                                  \
    X(float, cfg_pooled, CONFIGS, lay * K * Pw) /* (K, Pw) pool over the configurable nodes */    \
    X(float, cfg_pool_mean, CONFIGS, lay_batched * mm * K * H)                                    \
                                                    /* (K, H) meanmax: the mean half */           \
    X(float, cfg_pool_max, CONFIGS, lay_batched * mm * K * H) /* (K, H) meanmax: the max half */  \
    X(int32_t, cfg_pool_arg, CONFIGS, lay_batched * arg * K * H) /* (K, H) row of each maximum */ \
    X(float, readout, CONFIGS, K * R)               /* (K, R) the head's input */                 \
    X(float, attn_out, CONFIGS, attn * K * R)       /* (K, R) the readout after attention */      \
    X(float, attn_cache, CONFIGS, cache)            /* attention activations */                   \
    X(float, head_pre, CONFIGS, K * H)              /* (K, H) head_in @ w1^T + b1 */              \
    X(float, head_act, CONFIGS, K * H)              /* (K, H) act(head_pre) */                    \
    /* backward: dL/d of the forward buffer of the same name */                                   \
    X(float, d_h, BACKWARD, N * H)                  /* (N, H) of h_l, layer by layer */           \
    X(float, d_upd, BACKWARD, drop * N * H)         /* (N, H) of upd, before the dropout */       \
    X(float, d_upd_pre, BACKWARD, N * H)            /* (N, H) one layer's */                      \
    X(float, d_cat, BACKWARD, N * 3 * H)            /* (N, 3H) one layer's */                     \
    X(float, d_ln_out, BACKWARD, N * H)             /* (N, H) of z, one layer's */                \
    X(float, d_agg_ops, BACKWARD, N * H)            /* (N, H) one layer's */                      \
    X(float, d_agg_users, BACKWARD, N * H)          /* (N, H) one layer's */                      \
    X(float, d_pre0, BACKWARD, N * H)               /* (N, H) */                                  \
    X(float, d_base, BACKWARD, n * H)               /* (n, H) */                                  \
    X(float, d_x0, BACKWARD, n * (F + E))           /* (n, F+E) */                                \
    X(float, d_emb, BACKWARD, n * E)                /* (n, E) */                                  \
    X(float, d_cfg_proj, BACKWARD, tile_early * K * H + lay_early * K * nc * H)                   \
                                                    /* tile (K, H), layout early (K*nc, H) */     \
    X(float, d_pool_mean, BACKWARD, mm * G * H) /* (G, H) meanmax: scratch of either pooling */   \
    X(float, d_pool_max, BACKWARD, mm * G * H)      /* (G, H) meanmax: same */                    \
    X(float, d_pooled, BACKWARD, G * Pw)            /* (G, Pw) */                                 \
    X(float, d_cfg_pooled, BACKWARD, lay * K * Pw)  /* (K, Pw) */                                 \
    X(float, d_cfg_gather, BACKWARD, lay_early * K * nc * H) /* (K*nc, H) */                      \
    X(float, d_cfg_node_h, BACKWARD, lay_late * nc * H) /* (nc, H) */                             \
    X(float, d_late_act, BACKWARD, lay_late * K * nc * H) /* (K*nc, H) */                         \
    X(float, d_late_pre, BACKWARD, lay_late * K * nc * H) /* (K*nc, H) */                         \
    X(float, d_late_proj, BACKWARD, lay_late * nc * H) /* (nc, H) summed over the configs */      \
    X(float, d_readout, BACKWARD, K * R)            /* (K, R) */                                  \
    X(float, d_head_pre, BACKWARD, K * H)           /* (K, H) */                                  \
    X(float, d_head_act, BACKWARD, K * H)           /* (K, H) */                                  \
    X(float, d_attn_out, BACKWARD, attn * K * R)    /* (K, R) */                                  \
    X(float, attn_scratch, BACKWARD, scratch)       /* attention backward scratch */
// clang-format on

typedef enum pc_gnn_ws_stage {
    PC_WS_STAGE_PREFIX,
    PC_WS_STAGE_GNN,
    PC_WS_STAGE_CONFIGS,
    PC_WS_STAGE_BACKWARD
} pc_gnn_ws_stage;
typedef enum pc_gnn_ws_part { PC_WS_GRAPH, PC_WS_CONFIGS } pc_gnn_ws_part;

enum {
#define PC_WS_INDEX(type, name, stage, size) PC_WS_##name,
    PC_GNN_WS_BUFFERS(PC_WS_INDEX)
#undef PC_WS_INDEX
    PC_WS_COUNT
};

/* What a part is planned for: the sizes of the pass and the paths it takes. */
typedef struct pc_gnn_ws_dims {
    size_t n, nc, K;
    int train;    /* dropout masks are drawn */
    int backward; /* plan the BACKWARD buffers too */
    int fused;    /* layout late join scored config by config (inference) */
} pc_gnn_ws_dims;

struct pc_gnn_ws {
    /* the buffers: pointers into the two parts (NULL until planned) */
#define PC_WS_FIELD(type, name, stage, size) type *name;
    PC_GNN_WS_BUFFERS(PC_WS_FIELD)
#undef PC_WS_FIELD
    size_t cap[PC_WS_COUNT]; /* elements planned for each buffer */
    void *block[2];          /* the graph and the configs part: one allocation each */
    size_t block_len[2];     /* their bytes */
    int planned_late;        /* 1 + shared GNN of the model planned for; 0 = none */

    /* what the last pass saw */
    pc_gnn_graph g;
    const float *cfg;
    int K, S, train, have_prefix;
    int N;            /* rows of the GNN's last run (S * n): the stride of the (L, N, ...) slices */
    int fused;        /* the last layout-late scoring skipped the buffers backward needs */
    int hK;           /* configs of the last pc_gnn_head_forward */
    int for_backward; /* the configs part holds the last pass's activations and backward's
                         buffers; else backward plans them and recomputes the pass */
    int backward_seen; /* a backward ran: readouts plan backward's buffers up front */
    uint64_t cfg_seed; /* dropout seed at the start of the last pass over configs */
    int cfg_has_seed;
};

/*
 * Plans `part` for a pass of d: 0 if it already holds it, 1 if it was
 * re-planned (its contents are gone), -1 if out of memory (the part is then
 * empty).
 */
int pc_gnn_ws_plan(const pc_gnn *m, pc_gnn_ws *ws, pc_gnn_ws_part part, const pc_gnn_ws_dims *d);

/*
 * The planner under both the GNN workspace and the GST context (gst.c): the
 * buffers i < count with member[i] (every one when member is NULL), of
 * elem[i] bytes per element, need need[i] elements and hold cap[i]. When
 * one needs more, every buffer gets max(cap, 1.5 x need), *block (of
 * *len bytes) is released and one new block is mapped, every buffer at
 * off[i] on a cache line. Returns 0 (caps hold the needs; off untouched), 1
 * (re-planned, contents gone) or -1 (out of memory: *block NULL, caps 0).
 */
int pc_ws_plan_block(void **block, size_t *len, int count, const size_t *elem,
                     const uint8_t *member, const size_t *need, size_t *cap, size_t *off);
/* Releases a block of pc_ws_plan_block (NULL is fine). */
void pc_ws_block_free(void *block, size_t len);

#endif /* PC_GNN_WS_H */
