/*
 * Collective times on a TPU ICI torus (+ DCN between slices) and on GPU
 * NVLink domains + InfiniBand, after scaling_book.md §3 and §5 "GPU
 * rooflines". See docs/analytic.md for the formulas.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analytic/analytic_internal.h"

static const char *const coll_names[PC_COLL_COUNT] = {"allgather", "reducescatter", "allreduce",
                                                      "alltoall", "permute"};

const char *pc_coll_name(pc_coll c) { return (unsigned)c < PC_COLL_COUNT ? coll_names[c] : "?"; }

static const char *const conv_names[] = {"exact", "book"};
const char *pc_coll_conv_name(pc_coll_conv c) {
    return (unsigned)c <= PC_CONV_BOOK ? conv_names[c] : "?";
}

int pc_coll_parse(const char *s) {
    if (!s) return -1;
    char buf[32];
    size_t n = 0;
    for (; *s && n + 1 < sizeof buf; s++)
        if (*s != '-' && *s != '_' && *s != ' ') buf[n++] = (char)tolower((unsigned char)*s);
    if (*s) return -1;
    buf[n] = '\0';
    static const struct {
        const char *name;
        pc_coll c;
    } names[] = {{"allgather", PC_COLL_ALLGATHER},
                 {"ag", PC_COLL_ALLGATHER},
                 {"reducescatter", PC_COLL_REDUCESCATTER},
                 {"rs", PC_COLL_REDUCESCATTER},
                 {"allreduce", PC_COLL_ALLREDUCE},
                 {"ar", PC_COLL_ALLREDUCE},
                 {"psum", PC_COLL_ALLREDUCE},
                 {"alltoall", PC_COLL_ALLTOALL},
                 {"a2a", PC_COLL_ALLTOALL},
                 {"permute", PC_COLL_PERMUTE},
                 {"collectivepermute", PC_COLL_PERMUTE},
                 {"ppermute", PC_COLL_PERMUTE},
                 {"p2p", PC_COLL_PERMUTE},
                 {"sendrecv", PC_COLL_PERMUTE}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(buf, names[i].name)) return (int)names[i].c;
    return -1;
}

/* ---------------- meshes ---------------- */

#define PC_MESH_MAX_DEVICES (INT64_C(1) << 40)

pc_status pc_mesh_parse(const char *text, pc_mesh *out, pc_error *err) {
    memset(out, 0, sizeof *out);
    for (int i = 0; i < PC_MESH_MAX_AXES; i++) out->wrap[i] = -1;
    if (!text || !*text)
        return pc_fail(err, PC_ERR_ARG, "empty mesh: give axis sizes like 16x16 or 4x4x8");
    const char *p = text;
    int64_t total = 1;
    while (*p) {
        if (out->ndims == PC_MESH_MAX_AXES)
            return pc_fail(err, PC_ERR_ARG, "mesh '%s' has more than %d axes", text,
                           PC_MESH_MAX_AXES);
        if (!isdigit((unsigned char)*p))
            return pc_fail(err, PC_ERR_ARG, "mesh '%s': expected axis sizes like 16x16", text);
        int64_t v = 0;
        while (isdigit((unsigned char)*p)) {
            v = v * 10 + (*p++ - '0');
            if (v > PC_MESH_MAX_DEVICES)
                return pc_fail(err, PC_ERR_ARG, "mesh '%s': axis size too large", text);
        }
        if (v < 1) return pc_fail(err, PC_ERR_ARG, "mesh '%s': axis sizes must be >= 1", text);
        if (total > PC_MESH_MAX_DEVICES / v)
            return pc_fail(err, PC_ERR_ARG, "mesh '%s': too many devices", text);
        total *= v;
        out->size[out->ndims++] = v;
        if (*p == 'x' || *p == 'X' || *p == '*' || *p == ',') {
            p++;
            if (!*p) return pc_fail(err, PC_ERR_ARG, "mesh '%s': ends with a separator", text);
        } else if (*p) {
            return pc_fail(err, PC_ERR_ARG, "mesh '%s': unexpected '%c' (use 16x16)", text, *p);
        }
    }
    return PC_OK;
}

int64_t pc_mesh_devices(const pc_mesh *m) {
    int64_t n = 1;
    for (int i = 0; m && i < m->ndims; i++) n *= m->size[i];
    return n;
}

static int cmp_desc(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

static void mesh_text(const pc_mesh *m, unsigned skip_mask, int want_dcn, char *buf, size_t cap) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < m->ndims; i++) {
        int is_dcn = (m->dcn_mask >> i) & 1;
        if (is_dcn != want_dcn || ((skip_mask >> i) & 1)) continue;
        int w = snprintf(buf + used, cap - used, "%s%lld", used ? "x" : "", (long long)m->size[i]);
        if (w < 0 || (size_t)w >= cap - used) break;
        used += (size_t)w;
    }
    if (!used) snprintf(buf, cap, "1");
}

pc_status pc_mesh_check(const pc_chip *chip, pc_mesh *mesh, pc_error *err) {
    if (!chip || !mesh) return pc_fail(err, PC_ERR_ARG, "pc_mesh_check: NULL argument");
    if (mesh->ndims < 1 || mesh->ndims > PC_MESH_MAX_AXES)
        return pc_fail(err, PC_ERR_ARG, "mesh needs 1 to %d axes", PC_MESH_MAX_AXES);
    int64_t total = 1;
    for (int i = 0; i < mesh->ndims; i++) {
        if (mesh->size[i] < 1 || mesh->size[i] > PC_MESH_MAX_DEVICES ||
            total > PC_MESH_MAX_DEVICES / mesh->size[i])
            return pc_fail(err, PC_ERR_ARG, "mesh axis %d: size %lld out of range", i,
                           (long long)mesh->size[i]);
        total *= mesh->size[i];
        if (mesh->wrap[i] < -1 || mesh->wrap[i] > 1)
            return pc_fail(err, PC_ERR_ARG, "mesh axis %d: wrap must be -1, 0 or 1", i);
    }
    if (mesh->dcn_mask >> mesh->ndims)
        return pc_fail(err, PC_ERR_ARG, "DCN axes name an axis beyond the mesh's %d axes",
                       mesh->ndims);
    if (chip->kind == PC_CHIP_GPU) {
        if (mesh->dcn_mask)
            return pc_fail(err, PC_ERR_ARG,
                           "%s is a GPU: DCN axes apply to TPU slices only; devices beyond one "
                           "NVLink domain (%d GPUs) use InfiniBand automatically, so set the "
                           "mesh's dcn_mask to 0",
                           chip->name, chip->nvlink_domain);
        for (int i = 0; i < mesh->ndims; i++) mesh->wrap[i] = 0;
        return PC_OK;
    }
    /* TPU: the ICI axes are the torus axes of one slice, in order */
    int64_t ici[PC_MESH_MAX_AXES];
    int nici = 0;
    int64_t slice = 1;
    for (int i = 0; i < mesh->ndims; i++)
        if (!((mesh->dcn_mask >> i) & 1)) {
            ici[nici++] = mesh->size[i];
            slice *= mesh->size[i];
        }
    char txt[128]; /* the slice as text, formatted only for a message (planners check often) */
    int nbig = 0;
    for (int j = 0; j < nici; j++) nbig += ici[j] > 1;
    if (nici > chip->torus_dims) {
        if (nbig > chip->torus_dims) {
            mesh_text(mesh, 0, 0, txt, sizeof txt);
            return pc_fail(err, PC_ERR_ARG,
                           "%s is a %d-D torus but the slice %s has %d ICI axes: use at most %d "
                           "ICI axes (mark the axes that join slices in the mesh's dcn_mask)",
                           chip->name, chip->torus_dims, txt, nici, chip->torus_dims);
        }
    }
    int64_t pod[3] = {chip->pod_shape[0], chip->pod_shape[1], chip->pod_shape[2]};
    int64_t pod_chips = pod[0] * pod[1] * pod[2];
    int64_t sorted[PC_MESH_MAX_AXES];
    memcpy(sorted, ici, (size_t)nici * sizeof *sorted);
    qsort(sorted, (size_t)nici, sizeof *sorted, cmp_desc);
    qsort(pod, 3, sizeof *pod, cmp_desc);
    int fits = slice <= pod_chips;
    for (int j = 0; j < nici && fits; j++)
        if (sorted[j] > (j < 3 ? pod[j] : 1)) fits = 0;
    if (!fits) {
        mesh_text(mesh, 0, 0, txt, sizeof txt);
        char podtxt[64];
        int w = 0;
        for (int d = 0; d < chip->torus_dims && w >= 0 && (size_t)w < sizeof podtxt; d++)
            w += snprintf(podtxt + w, sizeof podtxt - (size_t)w, "%s%d", d ? "x" : "",
                          chip->pod_shape[d]);
        return pc_fail(err, PC_ERR_ARG,
                       "the ICI slice %s (%lld chips) does not fit a %s pod (%s, %lld chips); "
                       "make each axis at most the pod's, or split it into slices joined over "
                       "DCN in the mesh's dcn_mask",
                       txt, (long long)slice, chip->name, podtxt, (long long)pod_chips);
    }
    /* wraparound per ICI axis */
    /* CUBES: the slice must be whole cubes on every physical axis; axes the
     * mesh does not name are 1, so a 16x16 mesh on a 3-D torus (16x16x1) has
     * no wraparound */
    int cubes = 0;
    if (chip->wrap == PC_WRAP_CUBES && chip->wrap_size >= 1) {
        cubes = nbig == chip->torus_dims || chip->wrap_size == 1;
        for (int j = 0; j < nici; j++)
            if (ici[j] > 1 && ici[j] % chip->wrap_size) cubes = 0;
    }
    for (int i = 0; i < mesh->ndims; i++) {
        if ((mesh->dcn_mask >> i) & 1) {
            mesh->wrap[i] = 0;
            continue;
        }
        if (mesh->wrap[i] >= 0) continue;
        int w = 0;
        switch (chip->wrap) {
        case PC_WRAP_ALWAYS: w = 1; break;
        case PC_WRAP_FULL_AXIS: w = mesh->size[i] == chip->wrap_size; break;
        case PC_WRAP_CUBES: w = cubes; break;
        default: w = 0;
        }
        mesh->wrap[i] = (signed char)w;
    }
    return PC_OK;
}

/* ---------------- collective costs ---------------- */

typedef struct level {
    double bw, lat;
} level;

/* ICI part over the given axes (sizes, wraps), on V bytes. The exact
 * convention keeps the ring factor (n-1)/n and floor(X/2) hops; the book's
 * (scaling_book.md §3) is V/W_ici per axis and X/2 hops. */
static level ici_level(const pc_chip *c, const int64_t *x, const signed char *wrap, int n_ax,
                       pc_coll op, double V, pc_coll_conv conv) {
    level l = {0, 0};
    double W = pc_chip_ici_axis_bw(c);
    double n = 1, sumw = 0, hops = 0, maxeff = 0;
    for (int a = 0; a < n_ax; a++) {
        if (x[a] <= 1) continue;
        n *= (double)x[a];
        sumw += wrap[a] ? W : W / 2;
        double half = conv == PC_CONV_BOOK ? (double)x[a] / 2 : floor((double)x[a] / 2);
        hops += wrap[a] ? half : (double)(x[a] - 1);
        double eff = (double)x[a] * (wrap[a] ? 1 : 2);
        if (eff > maxeff) maxeff = eff;
    }
    if (n <= 1) return l;
    l.lat = hops * c->ici_hop_latency;
    if (op == PC_COLL_ALLTOALL) {
        l.bw = V * maxeff / (4 * n * W);
    } else {
        double ring = conv == PC_CONV_BOOK ? 1 : (n - 1) / n;
        l.bw = V * ring / sumw;
        if (op == PC_COLL_ALLREDUCE) l.bw *= 2, l.lat *= 2;
    }
    return l;
}

static double lvl_time(level l) { return l.bw > l.lat ? l.bw : l.lat; }

static pc_status no_bw(pc_error *err, const pc_chip *c, const char *field, const char *what) {
    return pc_fail(err, PC_ERR_UNSUPPORTED,
                   "chip %s has no %s bandwidth; set %s (bytes/s per chip) in the chip "
                   "(pc_chip or chips JSON)",
                   c->name, what, field);
}

/* Collective-permute: every device sends V bytes to a neighbour over one
 * link, one way: time = V / link + the link's latency (one message). */
static void permute_cost(double V, double link_bw, double lat, pc_coll_cost *out) {
    out->bw_time = V / link_bw;
    out->latency_time = lat;
    out->time = out->bw_time + lat;
}

static pc_status tpu_cost(const pc_chip *chip, const pc_mesh *mesh, unsigned axes_mask, pc_coll op,
                          double V, int64_t n, pc_coll_conv conv, pc_coll_cost *out,
                          pc_error *err) {
    int64_t x[PC_MESH_MAX_AXES];
    signed char wr[PC_MESH_MAX_AXES];
    int nx = 0;
    double S = 1;
    for (int i = 0; i < mesh->ndims; i++) {
        if (!((axes_mask >> i) & 1) || mesh->size[i] <= 1) continue;
        if ((mesh->dcn_mask >> i) & 1) {
            S *= (double)mesh->size[i];
            out->dcn_axes++;
        } else {
            if (mesh->wrap[i] < 0)
                return pc_fail(err, PC_ERR_ARG, "mesh not resolved: call pc_mesh_check first");
            x[nx] = mesh->size[i];
            wr[nx++] = mesh->wrap[i];
        }
    }
    out->ici_axes = nx;
    double n_ici = (double)n / S;
    if (nx && !(chip->ici_link_bw > 0)) return no_bw(err, chip, "ici_link_bw", "ICI");
    if (S > 1 && !(chip->dcn_bw > 0)) return no_bw(err, chip, "dcn_bw", "DCN");
    out->network = nx && S > 1 ? "ICI+DCN" : nx ? "ICI" : "DCN";
    if (op == PC_COLL_PERMUTE) { /* the slowest neighbour: across slices if the group spans them */
        if (S > 1)
            permute_cost(V, chip->dcn_bw, chip->dcn_latency, out), out->network = "DCN";
        else
            permute_cost(V, chip->ici_link_bw, chip->ici_hop_latency, out);
        return PC_OK;
    }
    double sfac = conv == PC_CONV_BOOK ? 1 : (S - 1) / S;
    level li = {0, 0}, ld = {0, 0};
    if (op == PC_COLL_ALLTOALL) {
        li = ici_level(chip, x, wr, nx, op, V / S, conv);
        if (S > 1) {
            ld.bw = V / (double)n * sfac / chip->dcn_bw;
            ld.lat = chip->dcn_latency;
        }
    } else {
        li = ici_level(chip, x, wr, nx, op, V, conv);
        if (S > 1) {
            ld.bw = V / n_ici * sfac / chip->dcn_bw;
            ld.lat = chip->dcn_latency;
            if (op == PC_COLL_ALLREDUCE) ld.bw *= 2, ld.lat *= 2;
        }
    }
    out->bw_time = li.bw + ld.bw;
    out->latency_time = li.lat + ld.lat;
    out->time = lvl_time(li) + lvl_time(ld);
    return PC_OK;
}

/* GPU: devices row-major, blocks of nvlink_domain share NVLink. Counts the
 * NVLink domains the group spans (M) and its most devices in one (D). */
static void gpu_group(const pc_chip *chip, const pc_mesh *mesh, unsigned axes_mask, int64_t n,
                      double *D, double *M) {
    int64_t stride[PC_MESH_MAX_AXES], s = 1;
    for (int i = mesh->ndims - 1; i >= 0; i--) {
        stride[i] = s;
        s *= mesh->size[i];
    }
    int ax[PC_MESH_MAX_AXES], na = 0;
    for (int i = 0; i < mesh->ndims; i++)
        if (((axes_mask >> i) & 1) && mesh->size[i] > 1) ax[na++] = i;
    int64_t idx[PC_MESH_MAX_AXES] = {0};
    int64_t dom = chip->nvlink_domain > 0 ? chip->nvlink_domain : 1;
    int64_t nodes = 0, run = 0, d_in = 0, last = -1;
    for (int64_t k = 0; k < n; k++) {
        int64_t id = 0;
        for (int a = 0; a < na; a++) id += idx[a] * stride[ax[a]];
        int64_t node = id / dom;
        if (node != last) {
            nodes++;
            run = 0;
            last = node;
        }
        if (++run > d_in) d_in = run;
        for (int a = na - 1; a >= 0; a--) { /* odometer, last axis fastest */
            if (++idx[a] < mesh->size[ax[a]]) break;
            idx[a] = 0;
        }
    }
    *D = (double)d_in;
    *M = (double)nodes;
}

static pc_status gpu_cost(const pc_chip *chip, const pc_mesh *mesh, unsigned axes_mask, pc_coll op,
                          double V, int64_t n, pc_coll_conv conv, pc_coll_cost *out,
                          pc_error *err) {
    if (n > (INT64_C(1) << 24))
        return pc_fail(err, PC_ERR_RANGE, "collective over %lld GPUs: at most 2^24", (long long)n);
    double D, M, N = (double)n;
    gpu_group(chip, mesh, axes_mask, n, &D, &M);
    out->nodes = (int64_t)M;
    if (D > 1 && !(chip->nvlink_bw > 0)) return no_bw(err, chip, "nvlink_bw", "NVLink");
    if (M > 1 && !(chip->ib_bw > 0)) return no_bw(err, chip, "ib_bw", "InfiniBand");
    out->network = M > 1 && D > 1 ? "NVLink+IB" : M > 1 ? "IB" : "NVLink";
    if (op == PC_COLL_PERMUTE) { /* the slowest neighbour: across domains if the group spans them */
        if (M > 1)
            permute_cost(V, chip->ib_bw, chip->dcn_latency, out), out->network = "IB";
        else
            permute_cost(V, chip->nvlink_bw, chip->coll_latency, out);
        return PC_OK;
    }
    int book = conv == PC_CONV_BOOK;
    level l = {0, chip->coll_latency + (M > 1 ? chip->dcn_latency : 0)};
    if (op == PC_COLL_ALLTOALL) {
        /* exact: (D-1)/N of the shard over NVLink, (N-D)/N over IB; book: B/(N W) in a
         * node, B/(M W_node) across nodes (scaling_book.md §5) */
        double t_nv = D > 1 ? V / N * (book ? D : D - 1) / N / chip->nvlink_bw : 0;
        double t_ib = M > 1 ? V / N * (book ? N : N - D) / N / chip->ib_bw : 0;
        l.bw = t_nv > t_ib ? t_nv : t_ib;
    } else {
        /* exact: min over levels of D_i W_i / (D_i - 1); book: min of W_i */
        double best = INFINITY;
        if (D > 1) best = book ? chip->nvlink_bw : D * chip->nvlink_bw / (D - 1);
        if (M > 1) {
            double wx = book ? D * chip->ib_bw : M * (D * chip->ib_bw) / (M - 1);
            if (wx < best) best = wx;
        }
        l.bw = V / best;
        if (op == PC_COLL_ALLREDUCE) l.bw *= 2, l.lat *= 2;
    }
    out->bw_time = l.bw;
    out->latency_time = l.lat;
    out->time = lvl_time(l);
    return PC_OK;
}

pc_status pc_collective_cost_conv(const pc_chip *chip, const pc_mesh *mesh, unsigned axes_mask,
                                  pc_coll op, double bytes, pc_coll_conv conv, pc_coll_cost *out,
                                  pc_error *err) {
    memset(out, 0, sizeof *out);
    out->network = "none";
    if (!chip || !mesh) return pc_fail(err, PC_ERR_ARG, "pc_collective_cost: NULL argument");
    if ((unsigned)op >= PC_COLL_COUNT)
        return pc_fail(err, PC_ERR_ARG, "bad collective %d", (int)op);
    if ((unsigned)conv > PC_CONV_BOOK)
        return pc_fail(err, PC_ERR_ARG, "bad collective convention %d (exact or book)", (int)conv);
    if (!isfinite(bytes) || bytes < 0)
        return pc_fail(err, PC_ERR_ARG, "collective bytes must be finite and >= 0");
    if (!axes_mask) return pc_fail(err, PC_ERR_ARG, "no mesh axes given for the collective");
    if (mesh->ndims < 1 || mesh->ndims > PC_MESH_MAX_AXES || (axes_mask >> mesh->ndims))
        return pc_fail(err, PC_ERR_ARG, "collective axes must be among the mesh's %d axes (0..%d)",
                       mesh->ndims, mesh->ndims - 1);
    int64_t n = 1;
    for (int i = 0; i < mesh->ndims; i++)
        if ((axes_mask >> i) & 1) n *= mesh->size[i];
    out->participants = n;
    out->shard_bytes = op == PC_COLL_PERMUTE ? bytes : n > 0 ? bytes / (double)n : 0;
    if (n <= 1) return PC_OK; /* nothing to exchange */
    pc_status st = chip->kind == PC_CHIP_TPU
                       ? tpu_cost(chip, mesh, axes_mask, op, bytes, n, conv, out, err)
                       : gpu_cost(chip, mesh, axes_mask, op, bytes, n, conv, out, err);
    if (st) {
        out->network = "none";
        return st;
    }
    out->latency_bound = out->latency_time > out->bw_time;
    out->algbw = out->time > 0 ? bytes / out->time : 0;
    return PC_OK;
}

pc_status pc_collective_cost(const pc_chip *chip, const pc_mesh *mesh, unsigned axes_mask,
                             pc_coll op, double bytes, pc_coll_cost *out, pc_error *err) {
    return pc_collective_cost_conv(chip, mesh, axes_mask, op, bytes, PC_CONV_EXACT, out, err);
}
