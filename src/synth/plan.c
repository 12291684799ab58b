/*
 * What pc_synth_write makes, graph by graph: scales, the graphs per split,
 * per-graph seeds and stems, and the builders of one layout program or tile
 * kernel. synth.c writes them; sim.c rebuilds one to time configs on it
 * (pc_synth_sim_load), so both go through the same code and seeds.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "synth/synth_internal.h"

#define CONFIG_NODE_FRAC 0.05 /* share of nodes that are configurable, small graphs */

static const sy_scale_cfg scales[3] = {
    /* tiny: unit tests, about a second */
    {8, 12, 24, 3, 20, 50, 80, 300, 150, 300},
    /* small: the demo and quick training */
    {40, 48, 96, 10, 200, 500, 1000, 2500, 1500, 3000},
    /* full: benchmarks */
    {600, 100, 300, 40, 800, 1200, 3000, 12000, 5000, 20000},
};

static int64_t eval_split_count(int64_t train) { return train >= 5 ? (train + 4) / 5 : 1; }

void sy_plan_make(sy_plan *p, const pc_synth_opts *o) {
    p->o = o;
    p->sc = scales[o->scale];
    p->cols = o->collections ? o->collections : (1u << SY_NCOL) - 1;
    int64_t t = o->graphs_per_split ? o->graphs_per_split : p->sc.tile_graphs;
    int64_t l = o->graphs_per_split ? o->graphs_per_split : p->sc.layout_graphs;
    p->count[0][0] = t;
    p->count[0][1] = p->count[0][2] = eval_split_count(t);
    p->count[1][0] = l;
    p->count[1][1] = p->count[1][2] = eval_split_count(l);
}

uint64_t sy_graph_seed(uint64_t seed, int family, int split, int64_t index) {
    return sy_mix(sy_mix(sy_mix(seed, (uint64_t)family + 1), (uint64_t)split + 1),
                  (uint64_t)index + 1);
}

int64_t sy_stem_index(const sy_plan *p, int kind, int split, int64_t index) {
    int64_t base = 0;
    for (int s = 0; s < split; s++) base += p->count[kind][s];
    return base + index;
}

/* Share of configurable nodes: about 5% in small programs, thinning to 2% in
   very large ones so node_config_feat stays within a few hundred MB. */
static double config_frac(int64_t n) {
    double f = CONFIG_NODE_FRAC * pow(2000.0 / (double)(n > 1 ? n : 1), 0.3);
    return f > CONFIG_NODE_FRAC ? CONFIG_NODE_FRAC : f < 0.02 ? 0.02 : f;
}

int sy_layout_prog_build(const sy_plan *p, int nlp, int split, int64_t index, sy_layout_prog *lp) {
    memset(lp, 0, sizeof *lp);
    sy_module_init(&lp->m);
    sy_rng r;
    sy_rng_seed(&r, sy_graph_seed(p->o->seed, 1 + nlp, split, index));
    int64_t target = p->o->layout_nodes;
    if (target)
        target = (int64_t)((double)target * (0.9 + 0.2 * sy_unif(&r)));
    else if (nlp)
        target = sy_range(&r, p->sc.nlp_lo, p->sc.nlp_hi);
    else
        target = sy_range(&r, p->sc.xla_lo, p->sc.xla_hi);
    if (sy_build_program(&lp->m, &r, nlp, target, lp->name, sizeof lp->name) != 0) return -1;
    return sy_choose_config_nodes(&lp->m, &r, config_frac(lp->m.n), &lp->ids, &lp->nc);
}

void sy_layout_prog_free(sy_layout_prog *lp) {
    if (!lp) return;
    free(lp->ids);
    sy_module_free(&lp->m);
    memset(lp, 0, sizeof *lp);
}

int sy_tile_prog_build(const sy_plan *p, int split, int64_t index, sy_tile_graph *g, sy_rng *r) {
    sy_rng_seed(r, sy_graph_seed(p->o->seed, SY_COL_TILE, split, index));
    int64_t nc =
        p->o->tile_configs ? p->o->tile_configs : sy_range(r, p->sc.tile_cfg_lo, p->sc.tile_cfg_hi);
    return sy_tile_graph_build(g, r, nc);
}
