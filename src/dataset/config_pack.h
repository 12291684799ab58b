/*
 * Config hygiene (internal): deduplication of a graph's configurations and
 * compact base-7 storage of layout configurations.
 *
 * ---- deduplication ----
 * Configs of one graph that are identical (tile: the 24 floats of
 * config_feat; layout: all nc x 18 values of node_config_feat[c]) form a
 * group; one representative is kept per group. Groups are numbered in order
 * of first appearance, so the kept configs keep the original order. Found by
 * a 64-bit hash of each row plus a full memcmp on hash hits: O(c * row bytes)
 * expected time, O(c) extra memory.
 *
 * Runtime of a group (pc_dedup_rule):
 *  PC_DEDUP_MIN (recommended) the fastest measurement. Re-measuring one
 *    compiled program only ever ADDS time (interference, clock and cache
 *    effects), so the minimum is the best estimate of its true cost and the
 *    standard benchmarking choice; it is also what the autotuner ranking
 *    would pick.
 *  PC_DEDUP_MEDIAN the lower median (element (k-1)/2 of the k sorted
 *    measurements, always a real measurement), for data whose noise may be
 *    two-sided.
 * With normalizers (tile), members are compared by runtime / normalizer, as
 * the tile target is that ratio and normalizers differ between machines.
 * Ties go to the lower original index. The chosen member is `pick`, so a
 * caller can also take normalizers[pick[g]].
 *
 * ---- layout codes ----
 * One 6-slot minor-to-major vector s[0..5] with values in {-1, ..., 5} is the
 * base-7 integer code = sum_i (s[i] + 1) * 7^(5-i), in [0, 7^6 = 117649):
 * slot 0 is the most significant digit, so codes sort like the vectors and
 * the all -1 (compiler default) vector is code 0. A config (nc, 18) floats
 * packs to (nc, 3) int32 codes (output, input, kernel tensor), 6x smaller.
 * Packing is exact and checked; unpacking restores the floats exactly.
 */
#ifndef PC_DATASET_CONFIG_PACK_H
#define PC_DATASET_CONFIG_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "perfcast/dataset.h"

#define PC_LAYOUT_SLOTS 6
#define PC_LAYOUT_TENSORS 3 /* PC_LAYOUT_CONFIG_DIM / PC_LAYOUT_SLOTS */
#define PC_LAYOUT_CODE_COUNT 117649

/* Code of one vector, or -1 if a slot is not an integer in [-1, 5]. */
int32_t pc_layout_code(const float *s);
/* The 6 slots of a code in [0, PC_LAYOUT_CODE_COUNT). */
void pc_layout_decode(int32_t code, float *s);

/*
 * feat (c, nc, 18) -> codes (c, nc, 3). On a bad value fails with
 * PC_ERR_RANGE naming the config, the node (position in node_config_ids),
 * the slot (0..17, and tensor/slot) and the value; codes is then partly
 * written.
 */
pc_status pc_layout_pack(const float *feat, int64_t c, int64_t nc, int32_t *codes,
                         pc_error *err);
/* codes (c, nc, 3) -> feat (c, nc, 18); PC_ERR_RANGE on a code out of range. */
pc_status pc_layout_unpack(const int32_t *codes, int64_t c, int64_t nc, float *feat,
                           pc_error *err);

typedef enum pc_dedup_rule { PC_DEDUP_MIN = 0, PC_DEDUP_MEDIAN } pc_dedup_rule;

typedef struct pc_dedup {
    int64_t n_in;     /* configs before */
    int64_t n_out;    /* groups (kept configs) */
    int64_t *map;     /* (n_in): group of each original config, in [0, n_out) */
    int64_t *first;   /* (n_out): lowest original index of the group, increasing */
    int64_t *pick;    /* (n_out): original index whose runtime the group takes */
    int64_t *count;   /* (n_out): group size */
    int64_t *runtime; /* (n_out): runtime[pick] (0 when no runtimes were given) */
} pc_dedup;

/*
 * Groups the c rows of row_bytes bytes each (row-major in `rows`) by byte
 * equality. runtime (c) may be NULL (then pick == first, runtime 0);
 * normalizers (c) may be NULL, else must be > 0 where used. `out` is
 * overwritten (free it first if it held a result).
 */
pc_status pc_config_dedup(const void *rows, int64_t c, size_t row_bytes, const int64_t *runtime,
                          const int64_t *normalizers, pc_dedup_rule rule, pc_dedup *out,
                          pc_error *err);
void pc_dedup_free(pc_dedup *d); /* NULL and zeroed structs are fine */

/*
 * Dedup of a loaded graph with its runtimes (and, for tile, normalizers).
 * Tile: byte equality of config_feat rows. Layout: node_config_feat is read
 * in bounded chunks (streamed graphs too) and packed to codes, then codes are
 * compared, so equality is by value (-0.0 == 0.0); a value outside -1..5
 * fails as in pc_layout_pack, prefixed with the graph's path.
 */
pc_status pc_graph_config_dedup(pc_graph *g, pc_dedup_rule rule, pc_dedup *out, pc_error *err);
/* Same, reading layout rows in chunks of at most chunk_bytes (0: 64 MiB). */
pc_status pc_graph_config_dedup_ex(pc_graph *g, pc_dedup_rule rule, uint64_t chunk_bytes,
                                   pc_dedup *out, pc_error *err);

/* all[i] = kept[map[i]] for i < n_in: scores of the kept configs to all. */
void pc_dedup_expand(const pc_dedup *d, const float *kept, float *all);

#endif /* PC_DATASET_CONFIG_PACK_H */
