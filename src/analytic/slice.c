/*
 * Slices: the mesh a chip count forms (one slice, else equal slices joined
 * over DCN), what that choice had to give up (pc_slice_note), and the default
 * fraction of peak. Used by the planners (plan_train.c, plan_serve.c) and the
 * calibrated step model (step_model.c), so it sits below all three.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analytic/analytic_internal.h"

double pc_plan_default_efficiency(const pc_chip *chip) {
    /* scaling_book.md §1: "H100/B200 reach ~80-85% of peak, TPUs ~95%" */
    return chip && chip->kind == PC_CHIP_GPU ? 0.80 : 0.95;
}

/* ---------------- a slice for a chip count ---------------- */

/* Lower is better: the most collective bandwidth (sum over axes of W with
 * wraparound, W/2 without), then the fewest hops (16 v5e: 4x4 over a ring of
 * 16; 8 v5e: 4x2; a v5p pod: 28x20x16 with wraparound). */
static double slice_score(const pc_mesh *m) {
    double hops = 0, bw = 0;
    for (int i = 0; i < m->ndims; i++) {
        if (m->size[i] <= 1 || ((m->dcn_mask >> i) & 1)) continue;
        hops += m->wrap[i] ? floor((double)m->size[i] / 2) : (double)(m->size[i] - 1);
        bw += m->wrap[i] ? 1.0 : 0.5;
    }
    return -bw * 1e6 + hops;
}

/* Best single-slice shape of n chips (axes in descending order), 0 if none. */
static int best_slice_shape(const pc_chip *chip, int64_t n, pc_mesh *best) {
    int d = chip->torus_dims >= 1 && chip->torus_dims <= 3 ? chip->torus_dims : 1;
    int64_t pod[3] = {chip->pod_shape[0], chip->pod_shape[1], chip->pod_shape[2]};
    for (int i = 0; i < 3; i++)
        if (pod[i] < 1) pod[i] = 1;
    int64_t maxdim = pod[0] > pod[1] ? pod[0] : pod[1];
    if (pod[2] > maxdim) maxdim = pod[2];
    /* the pod's axes largest first: a shape (a >= b >= c) that exceeds them
     * cannot be cut from the pod, so pc_mesh_check (which formats text) is
     * skipped for it; the calibrated model asks for slices once per plan */
    int64_t ps[3] = {pod[0], pod[1], pod[2]};
    for (int i = 0; i < 2; i++)
        for (int k = i + 1; k < 3; k++)
            if (ps[k] > ps[i]) {
                int64_t t = ps[i];
                ps[i] = ps[k];
                ps[k] = t;
            }
    double best_score = INFINITY;
    int found = 0;
    /* a >= b >= c all divide n and are at most the pod's largest axis:
     * walk that short list of divisors (the calibrated model asks for a
     * slice once per plan, so this is hot) */
    int64_t dv[64];
    int ndv = 0;
    for (int64_t a = 1; a <= maxdim && a <= n && ndv < 64; a++)
        if (n % a == 0) dv[ndv++] = a;
    for (int ia = 0; ia < ndv; ia++) {
        int64_t a = dv[ia], r = n / a;
        for (int ib = 0; ib <= ia; ib++) {
            int64_t b = dv[ib];
            if (b * b < r || r % b) continue; /* c = r / b must be whole and <= b */
            int64_t c = r / b;
            if (d < 3 && c != 1) continue;
            if (d < 2 && b != 1) continue;
            if (a > ps[0] || b > ps[1] || c > ps[2]) continue;
            /* with wraparound on every axis the score is at its best: skip
             * the check when even that does not beat the best so far */
            double hi = 0, hops = 0;
            int64_t dims3[3] = {a, b, c};
            for (int i = 0; i < d; i++)
                if (dims3[i] > 1) hi += 1, hops += floor((double)dims3[i] / 2);
            if (found && -hi * 1e6 + hops >= best_score) continue;
            pc_mesh m;
            memset(&m, 0, sizeof m);
            int64_t dims[3] = {a, b, c};
            for (int i = 0; i < d; i++) {
                if (i > 0 && dims[i] == 1) break;
                m.size[m.ndims] = dims[i];
                m.wrap[m.ndims++] = -1;
            }
            for (int i = m.ndims; i < PC_MESH_MAX_AXES; i++) m.wrap[i] = -1;
            if (pc_mesh_check(chip, &m, NULL) != PC_OK) continue;
            double s = slice_score(&m);
            if (s < best_score) best_score = s, *best = m, found = 1;
        }
    }
    return found;
}

/* The chosen mesh for a chip count (no note): one slice, else the fewest
 * equal slices over DCN. */
static pc_status slice_core(const pc_chip *chip, int64_t chips, pc_mesh *out, pc_error *err) {
    memset(out, 0, sizeof *out);
    for (int i = 0; i < PC_MESH_MAX_AXES; i++) out->wrap[i] = -1;
    if (chip->kind == PC_CHIP_GPU) {
        out->ndims = 1;
        out->size[0] = chips;
        return pc_mesh_check(chip, out, err);
    }
    if (best_slice_shape(chip, chips, out)) return PC_OK;
    /* S slices over DCN: the fewest slices whose shape fits the pod */
    int64_t div[PC_MAX_DIVISORS];
    int nd = pc_divisors(chips, div);
    for (int k = 1; k < nd; k++) {
        int64_t s = div[k];
        pc_mesh m;
        if (!best_slice_shape(chip, chips / s, &m)) continue;
        if (m.ndims >= PC_MESH_MAX_AXES) break;
        m.size[m.ndims] = s;
        m.wrap[m.ndims] = -1;
        m.dcn_mask = 1u << m.ndims;
        m.ndims++;
        pc_status st = pc_mesh_check(chip, &m, err);
        if (st) return st;
        *out = m;
        return PC_OK;
    }
    return pc_fail(err, PC_ERR_ARG, "no slice shape of %lld %s chips fits the pod",
                   (long long)chips, chip->name);
}

/* A standard slice shape (the header's rule) for the ICI axes of m. */
static int slice_standard(const pc_chip *chip, const pc_mesh *m) {
    int all_pow2 = 1, cubes = 1, small = 1, axes = 0;
    for (int i = 0; i < m->ndims; i++) {
        if ((m->dcn_mask >> i) & 1) continue;
        int64_t v = m->size[i];
        all_pow2 &= pc_is_pow2(v);
        small &= v <= chip->wrap_size;
        if (v > 1) axes++;
        if (chip->wrap_size > 0 && v % chip->wrap_size) cubes = 0;
    }
    if (chip->wrap == PC_WRAP_CUBES)
        return (all_pow2 && small) || (cubes && axes == chip->torus_dims);
    if (chip->wrap == PC_WRAP_FULL_AXIS) return all_pow2;
    return 1;
}

static void note_fill(const pc_chip *chip, int64_t chips, const pc_mesh *m, pc_slice_note *n) {
    memset(n, 0, sizeof *n);
    n->slices = 1;
    for (int i = 0; i < m->ndims; i++)
        if ((m->dcn_mask >> i) & 1) n->slices *= m->size[i];
    n->slice_chips = chips / n->slices;
    n->standard = chip->kind == PC_CHIP_GPU || slice_standard(chip, m);
    n->warn = n->slices > 1 || !n->standard;
}

/* Nearest counts (within 4096) that form one standard slice, or standard
 * slices of at least 64 chips (a cube, an 8x8) joined over DCN. */
static void note_nearest(const pc_chip *chip, int64_t chips, pc_slice_note *n) {
    for (int dir = -1; dir <= 1; dir += 2)
        for (int64_t d = 1; d <= 4096; d++) {
            int64_t c = chips + dir * d;
            if (c < 1 || c > (INT64_C(1) << 30)) break;
            pc_mesh m;
            pc_slice_note t;
            if (slice_core(chip, c, &m, NULL) != PC_OK) continue;
            note_fill(chip, c, &m, &t);
            if (!t.standard || (t.slices > 1 && t.slice_chips < 64)) continue;
            *(dir < 0 ? &n->below : &n->above) = c;
            break;
        }
}

/* "7x1x1": the ICI axes padded to the torus's dimensions. */
static void shape_text(const pc_chip *chip, const pc_mesh *m, char *buf, size_t cap) {
    size_t u = 0;
    int k = 0;
    buf[0] = '\0';
    for (int i = 0; i < m->ndims && u + 24 < cap; i++)
        if (!((m->dcn_mask >> i) & 1))
            u += (size_t)snprintf(buf + u, cap - u, "%s%lld", k++ ? "x" : "", (long long)m->size[i]);
    for (; k < chip->torus_dims && u + 4 < cap; k++)
        u += (size_t)snprintf(buf + u, cap - u, "%s1", k ? "x" : "");
}

static void nearest_text(const pc_slice_note *n, char *buf, size_t cap) {
    if (n->below && n->above)
        snprintf(buf, cap, "%lld or %lld", (long long)n->below, (long long)n->above);
    else if (n->below || n->above)
        snprintf(buf, cap, "%lld", (long long)(n->below ? n->below : n->above));
    else
        snprintf(buf, cap, "none within 4096");
}

pc_status pc_plan_slice_for_chips_note(const pc_chip *chip, int64_t chips, pc_mesh *out,
                                       pc_slice_note *note, pc_error *err) {
    memset(out, 0, sizeof *out);
    pc_slice_note local;
    pc_slice_note *n = note ? note : &local;
    memset(n, 0, sizeof *n);
    if (!chip) return pc_fail(err, PC_ERR_ARG, "pc_plan_slice_for_chips: NULL chip");
    if (chips < 1 || chips > (INT64_C(1) << 30))
        return pc_fail(err, PC_ERR_ARG, "chip count %lld out of range (1 .. 2^30)",
                       (long long)chips);
    pc_status st = slice_core(chip, chips, out, err);
    if (st) return st;
    note_fill(chip, chips, out, n);
    if (!n->warn) return PC_OK;
    if (!n->standard || n->slice_chips < 4) note_nearest(chip, chips, n);
    char shape[64], near[64];
    shape_text(chip, out, shape, sizeof shape);
    nearest_text(n, near, sizeof near);
    if (n->slices > 1 && n->slice_chips < 4) {
        pc_status bad = pc_fail(err, PC_ERR_ARG,
                                "%lld %s chips form no slice: the only split is %lld slices of "
                                "%lld chip%s (%s) over DCN; use a chip count that forms "
                                "standard slices, e.g. %s",
                                (long long)chips, chip->name, (long long)n->slices,
                                (long long)n->slice_chips, n->slice_chips == 1 ? "" : "s", shape,
                                near);
        memset(out, 0, sizeof *out);
        return bad;
    }
    if (n->slices > 1 && n->standard)
        snprintf(n->text, sizeof n->text,
                 "%lld chips do not form one %s slice; using %lld slices of %lld chips (%s) "
                 "joined over DCN",
                 (long long)chips, chip->name, (long long)n->slices, (long long)n->slice_chips,
                 shape);
    else if (n->slices > 1)
        snprintf(n->text, sizeof n->text,
                 "%lld chips do not form one %s slice; using %lld slices of %lld chips (%s, not "
                 "a standard slice shape) joined over DCN; nearest counts of standard slices: %s",
                 (long long)chips, chip->name, (long long)n->slices, (long long)n->slice_chips,
                 shape, near);
    else
        snprintf(n->text, sizeof n->text,
                 "%lld chips do not form a standard %s slice; using %s; nearest counts of "
                 "standard slices: %s",
                 (long long)chips, chip->name, shape, near);
    return PC_OK;
}

pc_status pc_plan_slice_for_chips(const pc_chip *chip, int64_t chips, pc_mesh *out, pc_error *err) {
    return pc_plan_slice_for_chips_note(chip, chips, out, NULL, err);
}

/* ---------------- integer helpers ---------------- */

int pc_divisors(int64_t n, int64_t *out) {
    int cnt = 0;
    for (int64_t d = 1; d * d <= n && cnt < PC_MAX_DIVISORS - 1; d++)
        if (n % d == 0) {
            out[cnt++] = d;
            if (d != n / d) out[cnt++] = n / d;
        }
    /* insertion sort (few hundred at most) */
    for (int i = 1; i < cnt; i++) {
        int64_t v = out[i];
        int k = i - 1;
        while (k >= 0 && out[k] > v) out[k + 1] = out[k], k--;
        out[k + 1] = v;
    }
    return cnt;
}
