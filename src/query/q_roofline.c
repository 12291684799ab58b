/* The roofline query (perfcast roofline): compute / memory / communication time of ops on a
 * chip, from op specs, an op file or XLA HLO (its collectives priced over a mesh). */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "perfcast/analytic.h"
#include "perfcast/hlo_cost.h"
#include "query/q_internal.h"
#include "query/request.h"

typedef struct roof_req {
    const char *chip, *chips_file, *ops, *hlo, *hlo_text, *stage, *mesh;
    const char *dtype, *weight_dtype;
    int dtype_set, loop_ops, plot; /* plot: the document's "plot" (every op, the chip) */
    long long top, module, max_memory; /* max_memory: 0 = PC_MEMORY_AUTO */
    double comm_bw, while_trips;
    const cJSON *matmul, *op;
    int nmatmul, nop, matmul_one; /* matmul_one: 'matmul' is one [B, D, F] */
} roof_req;

/* All ops of one run. An op's results are computed when needed (row_eval: the totals, the
 * rows shown, the others, the plot), not kept: an HLO file of 2M instructions is 2M ops, and
 * per op only its time and place in the order are kept (16 bytes; 8 more with collectives). */
typedef struct roof_set {
    size_t n;
    pc_op *ops;         /* the op specs and the ops file's ops: rows 0 .. hlo_base - 1 */
    size_t hlo_base;    /* index of the first HLO row */
    const pc_hlo_cost *hc;
    const roof_req *a;
    const pc_chip *chip;
    double *row_t;       /* per HLO row: its collectives' time (count x time); NULL: none */
    struct timed *order; /* print order: each op's time and index */
    int prec_fallbacks;  /* HLO dots/convolutions counted at the bf16 rate */
    pc_prec head;        /* the document's precision (eval_ops) */
    /* the HLO collectives, priced by pc_collective_cost */
    double coll_time;                  /* sum of count x time */
    int64_t coll_skipped;              /* over all devices without a mesh: not priced */
    int64_t coll_unaligned;            /* groups that are not whole mesh axes: priced 1-D */
    int64_t coll_failed;               /* groups the chip's network cannot hold: not priced */
    char coll_error[PC_ERROR_MSG_MAX]; /* the first of those */
    char networks[64];                 /* the networks used, comma-separated */
} roof_set;

typedef struct roof_tot {
    double time, tc, tm, tx;      /* sum of op times; by each op's bound */
    double t_math, t_mem, t_comm; /* sums of each term */
    double flops, bytes, comm;
    pc_bound bound; /* the largest summed term */
} roof_tot;

static const char *const ROOF_KEYS[] = {
    "chip",     "chips_file", "matmul",       "op",          "ops",      "hlo",
    "hlo_text", "stage",      "module",       "while_trips", "loop_ops", "mesh",
    "top",      "dtype",      "weight_dtype", "comm_bw",     "plot",     "max_memory", NULL};

/* ---- the request ------------------------------------------------------------------ */

/* 'plot': true (1: the chip and every op), false, or "chip" (2: the chip only). */
static pc_status read_plot(const cJSON *o, int *plot, pc_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "plot");
    if (cJSON_IsString(v) && !strcmp(v->valuestring, "chip")) {
        *plot = 2;
        return PC_OK;
    }
    if (cJSON_IsString(v))
        return pc_fail(err, PC_ERR_ARG, "'plot' expects true, false or \"chip\", got '%.100s'",
                       v->valuestring);
    return pc_qreq_bool(o, "plot", plot, err);
}

static pc_status read_req(const cJSON *o, roof_req *a, pc_error *err) {
    static const char precs[] = "(fp32 tf32 bf16 fp16 fp8 int8 int4 fp4)";
    pc_status st;
    memset(a, 0, sizeof *a);
    a->dtype = "bf16";
    a->module = -1;
    a->while_trips = 1;
    a->top = 10;
    if ((st = pc_qreq_string(o, "chip", &a->chip, err)) ||
        (st = pc_qreq_string(o, "chips_file", &a->chips_file, err)) ||
        (st = pc_qreq_string(o, "ops", &a->ops, err)) ||
        (st = pc_qreq_string(o, "hlo", &a->hlo, err)) ||
        (st = pc_qreq_string(o, "hlo_text", &a->hlo_text, err)) ||
        (st = pc_qreq_string(o, "stage", &a->stage, err)) ||
        (st = pc_qreq_string(o, "mesh", &a->mesh, err)) ||
        (st = pc_qreq_string(o, "dtype", &a->dtype, err)) ||
        (st = pc_qreq_string(o, "weight_dtype", &a->weight_dtype, err)) ||
        (st = pc_qreq_bool(o, "loop_ops", &a->loop_ops, err)) ||
        (st = read_plot(o, &a->plot, err)) ||
        (st = pc_qreq_int(o, "top", 0, 1000000000, &a->top, err)) ||
        (st = pc_qreq_int(o, "module", -1, 1000000000, &a->module, err)) ||
        (st = pc_qreq_int(o, "max_memory", 1, INT64_MAX, &a->max_memory, err)) ||
        (st = pc_qreq_count(o, "while_trips", 0, &a->while_trips, err)) ||
        (st = pc_qreq_bytes(o, "comm_bw", &a->comm_bw, err)) ||
        (st = pc_qreq_list(o, "matmul", &a->matmul, &a->nmatmul, err)) ||
        (st = pc_qreq_list(o, "op", &a->op, &a->nop, err)))
        return st;
    a->dtype_set = cJSON_GetObjectItemCaseSensitive(o, "dtype") != NULL;
    if (cJSON_IsArray(a->matmul) && a->nmatmul == 3 && cJSON_IsNumber(a->matmul->child))
        a->nmatmul = 1, a->matmul_one = 1;
    if (!a->chip)
        return pc_fail(err, PC_ERR_ARG, "'chip' is required (a chip name: v5e, h100, ...)");
    if (!a->nmatmul && !a->nop && !a->ops && !a->hlo && !a->hlo_text)
        return pc_fail(err, PC_ERR_ARG,
                       "give ops: 'matmul', 'op', 'ops' (a file), 'hlo' or 'hlo_text'");
    if (a->hlo && a->hlo_text)
        return pc_fail(err, PC_ERR_ARG, "give 'hlo' or 'hlo_text', not both");
    if (!a->hlo && !a->hlo_text &&
        (a->module >= 0 || a->while_trips != 1 || a->loop_ops || a->mesh))
        return pc_fail(err, PC_ERR_ARG,
                       "'module', 'while_trips', 'loop_ops' and 'mesh' go with 'hlo'");
    if (!(a->while_trips >= 1))
        return pc_fail(err, PC_ERR_ARG, "'while_trips' expects a number >= 1, got %g",
                       a->while_trips);
    if (a->comm_bw < 0)
        return pc_fail(err, PC_ERR_ARG, "'comm_bw' expects bytes/s > 0, got %g", a->comm_bw);
    if (a->stage && !a->hlo)
        return pc_fail(err, PC_ERR_ARG, "'stage' goes with 'hlo' (an XLA dump directory)");
    if (pc_prec_parse(a->dtype) < 0)
        return pc_fail(err, PC_ERR_ARG, "'dtype' '%s' unknown %s", a->dtype, precs);
    if (a->weight_dtype && pc_prec_parse(a->weight_dtype) < 0)
        return pc_fail(err, PC_ERR_ARG, "'weight_dtype' '%s' unknown %s", a->weight_dtype, precs);
    return PC_OK;
}

/* ---- gathering ops ---------------------------------------------------------------- */

typedef struct timed {
    double time;
    size_t i;
} timed;

static void set_free(roof_set *s) {
    free(s->ops);
    free(s->row_t);
    free(s->order);
}

/* A matmul's "B,D,F" (or [B, D, F]) as "BxDxF". */
static pc_status matmul_dims(const cJSON *v, char *dims, size_t cap, pc_error *err) {
    if (cJSON_IsString(v)) {
        snprintf(dims, cap, "%s", v->valuestring);
        for (char *p = dims; *p; p++)
            if (*p == ',') *p = 'x';
        return PC_OK;
    }
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 3)
        return pc_fail(err, PC_ERR_ARG,
                       "'matmul' expects \"B,D,F\" or [B, D, F] for [B,D] @ [D,F]");
    size_t l = 0;
    for (const cJSON *x = v->child; x; x = x->next) {
        if (!cJSON_IsNumber(x))
            return pc_fail(err, PC_ERR_ARG, "'matmul' expects [B, D, F] as numbers");
        l += (size_t)snprintf(dims + l, cap > l ? cap - l : 0, "%s%.17g", l ? "x" : "",
                              x->valuedouble);
    }
    return PC_OK;
}

/* One matmul or op spec (the i-th of all) as an op line. An item of 'op' may be
 * {"matmul": "B,D,F"}: the CLI keeps its flags' order that way. */
static pc_status spec_op(const roof_req *a, const cJSON *v, int is_matmul, int i, pc_op *op,
                         pc_error *err) {
    char line[1100], dims[256];
    pc_error e;
    const char *wd = a->weight_dtype ? a->weight_dtype : "";
    const char *wk = a->weight_dtype ? " wdtype=" : "";
    const cJSON *mm = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "matmul") : NULL;
    if (mm) v = mm, is_matmul = 1;
    const char *key = is_matmul ? "matmul" : "op";
    char shown[300];
    if (is_matmul) {
        pc_status st = matmul_dims(v, dims, sizeof dims, err);
        if (st != PC_OK) return st;
        snprintf(line, sizeof line, "matmul dtype=%s%s%s shape=%s name=matmul%d", a->dtype, wk, wd,
                 dims, i);
        snprintf(shown, sizeof shown, "%s", cJSON_IsString(v) ? v->valuestring : dims);
    } else {
        if (!cJSON_IsString(v))
            return pc_fail(err, PC_ERR_ARG,
                           "'op' expects op specs like \"elementwise shape=8192x4096\"");
        const char *sp = v->valuestring;
        snprintf(line, sizeof line, "%.*s", (int)strcspn(sp, " \t"), sp);
        size_t l = strlen(line);
        snprintf(line + l, sizeof line - l, " dtype=%s%s%s name=op%d %s", a->dtype, wk, wd, i,
                 sp + strcspn(sp, " \t"));
        snprintf(shown, sizeof shown, "%s", sp);
    }
    if (pc_op_parse_line(line, op, &e) != PC_OK)
        return pc_fail(err, PC_ERR_ARG, "%s '%s': %s", key, shown, e.msg);
    return PC_OK;
}

/* The analytic precision of an XLA element type. */
static pc_prec prec_of_type(int32_t t) {
    switch (t) {
    case 16: return PC_PREC_BF16;
    case 10: return PC_PREC_FP16;
    case 2:
    case 6: return PC_PREC_INT8;
    case 19:
    case 20:
    case 23:
    case 24:
    case 25:
    case 28:
    case 29:
    case 33: return PC_PREC_FP8;
    case 21:
    case 22: return PC_PREC_INT4;
    case 32: return PC_PREC_FP4;
    default: return PC_PREC_FP32;
    }
}

/* One HLO row as a raw op: its FLOPs and bytes, its precision, matrix or vector unit;
 * *fallback: 1 when a matrix op is counted at the bf16 rate. */
static void hlo_op(const roof_req *a, const pc_chip *chip, const pc_hlo_op_cost *h, pc_op *op,
                   int *fallback) {
    *op = pc_op_init(PC_OP_RAW);
    snprintf(op->name, sizeof op->name, "%s", h->name);
    op->flops = h->flops;
    op->bytes = h->bytes_read + h->bytes_written;
    op->prec = prec_of_type(h->compute_type);
    *fallback = 0;
    if (h->matrix && a->dtype_set) op->prec = (pc_prec)pc_prec_parse(a->dtype);
    if (h->matrix && pc_chip_flops(chip, op->prec) <= 0) { /* e.g. f32 dots on a TPU */
        op->prec = PC_PREC_BF16;
        *fallback = 1;
    }
    op->wprec = op->prec;
}

/* Op i's full name (HLO names may be longer than pc_op.name), kind (pc_op_kind_name or the
 * HLO opcode) and HLO row (NULL for the others). */
static const pc_hlo_op_cost *row_hlo(const roof_set *s, size_t i) {
    return i < s->hlo_base ? NULL : &s->hc->ops[i - s->hlo_base];
}
static const char *row_label(const roof_set *s, size_t i) {
    return i < s->hlo_base ? s->ops[i].name : s->hc->ops[i - s->hlo_base].name;
}
static const char *row_kind(const roof_set *s, size_t i) {
    return i < s->hlo_base ? pc_op_kind_name(s->ops[i].kind) : s->hc->ops[i - s->hlo_base].opcode;
}

/* Op i evaluated: the op, its cost and roofline (the same every time it is asked for);
 * *fallback (may be NULL) as hlo_op says. */
static pc_status row_eval(const roof_set *s, size_t i, pc_op *op, pc_cost *c, pc_roofline *r,
                          int *fallback, pc_error *e) {
    double bw = 0; /* the link rate that gives its collectives' time; 0: the default */
    int fb = 0;
    const pc_hlo_op_cost *h = row_hlo(s, i);
    if (!h) {
        *op = s->ops[i];
    } else {
        hlo_op(s->a, s->chip, h, op, &fb);
        double t = s->row_t ? s->row_t[i - s->hlo_base] : 0;
        op->comm_bytes = t > 0 ? h->comm_bytes : 0;
        bw = t > 0 ? h->comm_bytes / t : 0;
    }
    if (fallback) *fallback = fb;
    pc_status st = pc_op_cost(op, c, e);
    if (st != PC_OK) return st;
    if (h) c->vector = !h->matrix;
    return pc_roofline_eval(s->chip, c, bw > 0 ? bw : s->a->comm_bw, r, e);
}

static pc_status gather_ops(const roof_req *a, const pc_chip *chip, const pc_op *file_ops,
                            size_t nfile, const pc_hlo_cost *hc, roof_set *s, pc_error *err) {
    size_t nspecs = (size_t)a->nmatmul + (size_t)a->nop;
    size_t nh = hc ? (size_t)hc->n_ops : 0, base = nspecs + nfile;
    s->n = base + nh;
    s->hc = hc;
    s->a = a;
    s->chip = chip;
    s->ops = calloc(base + 1, sizeof *s->ops);
    s->order = calloc(s->n + 1, sizeof *s->order);
    if (!s->ops || !s->order) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    for (int i = 0; i < a->nmatmul + a->nop; i++) {
        int mm = i < a->nmatmul;
        const cJSON *v = a->matmul_one && mm ? a->matmul
                         : mm                ? pc_qreq_item(a->matmul, a->nmatmul, i)
                                             : pc_qreq_item(a->op, a->nop, i - a->nmatmul);
        pc_status st = spec_op(a, v, mm, i, &s->ops[i], err);
        if (st != PC_OK) return st;
    }
    if (nfile) memcpy(s->ops + nspecs, file_ops, nfile * sizeof *s->ops);
    s->hlo_base = base;
    return PC_OK;
}

/* ---- HLO collectives ------------------------------------------------------------------ */

/* The mesh axes a replica group spans (bit i: its devices differ on axis i). -1 if a device
 * is outside the mesh or the group is not whole axes. */
static int group_axes(const pc_mesh *m, const pc_hlo_collective *c, unsigned *mask) {
    *mask = 0;
    if (c->group_size <= 0) {
        *mask = (1u << m->ndims) - 1;
        return 0;
    }
    int64_t ndev = pc_mesh_devices(m), first[PC_MESH_MAX_AXES] = {0};
    for (int64_t k = 0; k < c->group_ids; k++) {
        int64_t id = c->group[k];
        if (id < 0 || id >= ndev) return -1;
        for (int i = m->ndims - 1; i >= 0; i--) {
            int64_t x = id % m->size[i];
            id /= m->size[i];
            if (k == 0)
                first[i] = x;
            else if (x != first[i])
                *mask |= 1u << i;
        }
    }
    int64_t n = 1;
    for (int i = 0; i < m->ndims; i++)
        if ((*mask >> i) & 1) n *= m->size[i];
    return n == c->group_size ? 0 : -1;
}

static pc_coll coll_of(pc_hlo_coll k) {
    switch (k) {
    case PC_HLO_COLL_ALL_GATHER: return PC_COLL_ALLGATHER;
    case PC_HLO_COLL_REDUCE_SCATTER: return PC_COLL_REDUCESCATTER;
    case PC_HLO_COLL_ALL_TO_ALL: return PC_COLL_ALLTOALL;
    case PC_HLO_COLL_PERMUTE: return PC_COLL_PERMUTE;
    default: return PC_COLL_ALLREDUCE;
    }
}

static void add_network(roof_set *s, const char *net) {
    if (!net || strstr(s->networks, net)) return;
    size_t l = strlen(s->networks);
    snprintf(s->networks + l, sizeof s->networks - l, "%s%s", l ? ", " : "", net);
}

/* One collective's time over the mesh axes its group spans, else over its group as a
 * 1-D mesh. 1 when not priced: over all devices without a mesh, or a group the chip's
 * network cannot hold (counted, the first message kept); 0 when priced. */
static int coll_time(const pc_chip *chip, const pc_mesh *mesh, const pc_hlo_collective *c,
                     roof_set *s, double *t) {
    pc_mesh m1;
    pc_error e;
    unsigned mask = 1;
    const pc_mesh *m = mesh;
    if (!mesh || group_axes(mesh, c, &mask)) {
        if (c->group_size <= 0) {
            s->coll_skipped++;
            return 1;
        }
        s->coll_unaligned += mesh != NULL;
        memset(&m1, 0, sizeof m1);
        m1.ndims = 1;
        m1.size[0] = c->group_size;
        m1.wrap[0] = -1;
        if (pc_mesh_check(chip, &m1, &e) != PC_OK) goto fail;
        m = &m1;
        mask = 1;
    }
    double v = c->bytes;
    if (c->kind == PC_HLO_COLL_ALL_TO_ALL && c->group_size <= 0)
        for (int i = 0; i < m->ndims; i++) v *= (double)m->size[i]; /* all devices: V = x n */
    pc_coll_cost cc;
    if (pc_collective_cost(chip, m, mask, coll_of(c->kind), v, &cc, &e) != PC_OK) goto fail;
    *t = cc.time;
    if (cc.participants > 1) add_network(s, cc.network);
    return 0;
fail:
    if (!s->coll_failed++)
        snprintf(s->coll_error, sizeof s->coll_error, "collective %.200s (%s): %.700s", c->name,
                 pc_hlo_coll_name(c->kind), e.msg);
    return 1;
}

/* Each HLO row's communication: its collectives' time (count x pc_collective_cost) as the
 * comm bytes over the rate that gives that time. */
static pc_status price_collectives(const roof_req *a, const pc_chip *chip, const pc_hlo_cost *hc,
                                   roof_set *s, pc_error *err) {
    pc_mesh mesh;
    pc_error e;
    if (!hc || !hc->n_collectives) return PC_OK;
    if (a->mesh &&
        (pc_mesh_parse(a->mesh, &mesh, &e) != PC_OK || pc_mesh_check(chip, &mesh, &e) != PC_OK))
        return pc_fail(err, PC_ERR_ARG, "'mesh' '%s': %s", a->mesh, e.msg);
    double *row_t = calloc((size_t)hc->n_ops + 1, sizeof *row_t);
    if (!row_t) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
    for (int64_t k = 0; k < hc->n_collectives; k++) {
        const pc_hlo_collective *c = &hc->collectives[k];
        double t = 0;
        if (coll_time(chip, a->mesh ? &mesh : NULL, c, s, &t)) continue;
        if (c->op >= 0 && c->op < hc->n_ops) row_t[c->op] += c->count * t;
        s->coll_time += c->count * t;
    }
    s->row_t = row_t; /* row_eval: comm bytes over the rate that gives that time */
    return PC_OK;
}

/* ---- evaluation --------------------------------------------------------------------- */

/* Every op evaluated once, in order: the totals, each op's time (the order's), the bf16
 * fallbacks and the document's precision (the op with the most FLOPs among those the chip
 * has a rate for: the plot's roof and the header; bf16 when none, e.g. only f32 vector ops
 * on a TPU). */
static pc_status eval_ops(const pc_chip *chip, roof_set *s, roof_tot *t, pc_error *err) {
    pc_error e;
    pc_op op;
    pc_cost c;
    pc_roofline rl;
    size_t best = s->n;
    double best_flops = 0;
    pc_prec prec0 = PC_PREC_BF16;
    memset(t, 0, sizeof *t);
    for (size_t i = 0; i < s->n; i++) {
        int fb = 0;
        memset(&e, 0, sizeof e);
        if (row_eval(s, i, &op, &c, &rl, &fb, &e) != PC_OK)
            return pc_fail(err, e.code ? e.code : PC_ERR_ARG, "%s: %s", row_label(s, i), e.msg);
        const pc_roofline *r = &rl;
        s->prec_fallbacks += fb;
        s->order[i] = (timed){r->time, i};
        t->time += r->time;
        t->t_math += r->t_compute;
        t->t_mem += r->t_memory;
        t->t_comm += r->t_comm;
        t->flops += c.flops;
        t->bytes += c.bytes;
        t->comm += c.comm_bytes;
        *(r->bound == PC_BOUND_COMPUTE  ? &t->tc
          : r->bound == PC_BOUND_MEMORY ? &t->tm
                                        : &t->tx) += r->time;
        if (i == 0) prec0 = op.prec;
        if (pc_chip_flops(chip, op.prec) > 0 && (best == s->n || c.flops > best_flops))
            best = i, best_flops = c.flops, s->head = op.prec;
    }
    if (best == s->n)
        s->head = pc_chip_flops(chip, PC_PREC_BF16) > 0 || !s->n ? PC_PREC_BF16 : prec0;
    t->bound = t->t_math >= t->t_mem && t->t_math >= t->t_comm ? PC_BOUND_COMPUTE
               : t->t_mem >= t->t_comm                         ? PC_BOUND_MEMORY
                                                               : PC_BOUND_COMM;
    return PC_OK;
}

static int by_time_desc(const void *x, const void *y) {
    const timed *a = x, *b = y;
    if (a->time != b->time) return a->time < b->time ? 1 : -1;
    return (a->i > b->i) - (a->i < b->i);
}

/* Print order: as given, or slowest first with top. Returns the rows to show. */
static size_t make_order(roof_set *s, long long top) {
    if (top <= 0 || (size_t)top >= s->n) return s->n;
    qsort(s->order, s->n, sizeof *s->order, by_time_desc);
    return (size_t)top;
}

/* ---- the document ----------------------------------------------------------------------- */

/* Op i again (eval_ops succeeded on every op: the same results). */
static void row_again(const roof_set *s, size_t i, pc_op *op, pc_cost *c, pc_roofline *r) {
    pc_error e;
    if (row_eval(s, i, op, c, r, NULL, &e) != PC_OK) { /* not reached */
        memset(c, 0, sizeof *c);
        memset(r, 0, sizeof *r);
    }
}

static cJSON *json_op(const roof_set *s, size_t i, double total) {
    cJSON *x = cJSON_CreateObject();
    pc_op op;
    pc_cost cost;
    pc_roofline rl;
    row_again(s, i, &op, &cost, &rl);
    const pc_roofline *r = &rl;
    const pc_hlo_op_cost *h = row_hlo(s, i);
    cJSON_AddStringToObject(x, "name", row_label(s, i));
    cJSON_AddStringToObject(x, "kind", row_kind(s, i));
    cJSON_AddStringToObject(x, "dtype", pc_prec_name(op.prec));
    cJSON_AddNumberToObject(x, "flops", cost.flops);
    cJSON_AddNumberToObject(x, "bytes", cost.bytes);
    if (h) {
        cJSON_AddNumberToObject(x, "module", h->module);
        cJSON_AddStringToObject(x, "element_type", pc_hlo_type_name(h->element_type));
        cJSON_AddBoolToObject(x, "matrix", h->matrix);
        cJSON_AddNumberToObject(x, "bytes_read", h->bytes_read);
        cJSON_AddNumberToObject(x, "bytes_written", h->bytes_written);
        cJSON_AddNumberToObject(x, "transcendentals", h->transcendentals);
        cJSON_AddNumberToObject(x, "trips", h->trips);
        cJSON_AddNumberToObject(x, "collectives", (double)h->collectives);
    }
    cJSON_AddNumberToObject(x, "comm_bytes", cost.comm_bytes);
    cJSON_AddNumberToObject(x, "intensity", r->intensity);
    cJSON_AddNumberToObject(x, "critical_intensity", r->critical_intensity);
    cJSON_AddNumberToObject(x, "t_compute", r->t_compute);
    cJSON_AddNumberToObject(x, "t_memory", r->t_memory);
    cJSON_AddNumberToObject(x, "t_comm", r->t_comm);
    cJSON_AddNumberToObject(x, "time", r->time);
    cJSON_AddNumberToObject(x, "time_upper", r->time_upper);
    cJSON_AddStringToObject(x, "bound", pc_bound_name(r->bound));
    cJSON_AddNumberToObject(x, "share", total > 0 ? r->time / total : 0);
    return x;
}

static void json_hlo_collectives(cJSON *h, const pc_hlo_cost *hc) {
    cJSON *cs = cJSON_AddArrayToObject(h, "collectives");
    for (int64_t k = 0; k < hc->n_collectives; k++) {
        const pc_hlo_collective *c = &hc->collectives[k];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "name", c->name);
        cJSON_AddStringToObject(x, "kind", pc_hlo_coll_name(c->kind));
        cJSON_AddStringToObject(x, "op",
                                c->op >= 0 && c->op < hc->n_ops ? hc->ops[c->op].name : "");
        cJSON_AddNumberToObject(x, "bytes", c->bytes);
        cJSON_AddNumberToObject(x, "count", c->count);
        cJSON_AddNumberToObject(x, "group_size", (double)c->group_size);
        cJSON_AddNumberToObject(x, "groups", (double)c->n_groups);
        cJSON_AddItemToArray(cs, x);
    }
}

static void json_hlo_source(cJSON *o, const roof_req *a, const pc_hlo_cost *hc, const roof_set *s) {
    cJSON *h = cJSON_AddObjectToObject(o, "hlo");
    if (a->hlo)
        cJSON_AddStringToObject(h, "file", a->hlo);
    else
        cJSON_AddNullToObject(h, "file");
    cJSON_AddStringToObject(h, "format", hc->format);
    cJSON *mods = cJSON_AddArrayToObject(h, "modules");
    for (int32_t i = 0; i < hc->n_modules; i++)
        cJSON_AddItemToArray(mods, cJSON_CreateString(hc->module_names[i]));
    cJSON_AddNumberToObject(h, "instructions", (double)hc->instructions);
    cJSON_AddNumberToObject(h, "ops", (double)hc->n_ops);
    cJSON_AddNumberToObject(h, "free_instructions", (double)hc->free_ops);
    cJSON_AddNumberToObject(h, "while_loops", (double)hc->while_loops);
    cJSON_AddNumberToObject(h, "while_trips", a->while_trips);
    cJSON_AddNumberToObject(h, "loops_known_trip_count", (double)hc->loops_known);
    cJSON_AddNumberToObject(h, "loops_counted", (double)hc->loops_counted);
    cJSON_AddNumberToObject(h, "loops_fallback", (double)hc->loops_fallback);
    cJSON_AddNumberToObject(h, "library_calls", (double)hc->library_calls);
    cJSON_AddNumberToObject(h, "comm_bytes", hc->comm_bytes);
    json_hlo_collectives(h, hc);
    cJSON_AddNumberToObject(h, "unsized_tuples", (double)hc->unsized);
    cJSON_AddNumberToObject(h, "dots_without_dims", (double)hc->dots_guessed);
    cJSON_AddNumberToObject(h, "unknown_ops", (double)hc->unknown_ops);
    cJSON_AddNumberToObject(h, "flops", hc->flops);
    cJSON_AddNumberToObject(h, "transcendentals", hc->transcendentals);
    cJSON_AddNumberToObject(h, "bytes_read", hc->bytes_read);
    cJSON_AddNumberToObject(h, "bytes_written", hc->bytes_written);
    /* what the text output's notes say */
    cJSON_AddNumberToObject(h, "collective_time", s->coll_time);
    cJSON_AddStringToObject(h, "networks", s->networks);
    cJSON_AddNumberToObject(h, "collectives_over_all_devices", (double)s->coll_skipped);
    cJSON_AddNumberToObject(h, "collectives_unaligned", (double)s->coll_unaligned);
    cJSON_AddNumberToObject(h, "collectives_unpriced", (double)s->coll_failed);
    if (s->coll_failed)
        cJSON_AddStringToObject(h, "collective_error", s->coll_error);
    else
        cJSON_AddNullToObject(h, "collective_error");
    if (hc->unknown_ops)
        cJSON_AddStringToObject(h, "first_unknown_op", hc->first_unknown);
    else
        cJSON_AddNullToObject(h, "first_unknown_op");
}

static void json_totals(cJSON *o, const roof_tot *t) {
    cJSON *x = cJSON_AddObjectToObject(o, "total");
    cJSON_AddNumberToObject(x, "flops", t->flops);
    cJSON_AddNumberToObject(x, "bytes", t->bytes);
    cJSON_AddNumberToObject(x, "comm_bytes", t->comm);
    cJSON_AddNumberToObject(x, "intensity", t->bytes > 0 ? t->flops / t->bytes : 0);
    cJSON_AddNumberToObject(x, "time", t->time);
    cJSON_AddNumberToObject(x, "compute_bound_time", t->tc);
    cJSON_AddNumberToObject(x, "memory_bound_time", t->tm);
    cJSON_AddNumberToObject(x, "comm_bound_time", t->tx);
    cJSON_AddNumberToObject(x, "t_compute", t->t_math);
    cJSON_AddNumberToObject(x, "t_memory", t->t_mem);
    cJSON_AddNumberToObject(x, "t_comm", t->t_comm);
    cJSON_AddStringToObject(x, "bound", pc_bound_name(t->bound));
}

static void json_others(cJSON *o, const roof_set *s, size_t shown, double total) {
    if (shown >= s->n) {
        cJSON_AddNullToObject(o, "others");
        return;
    }
    double f = 0, b = 0, tm = 0;
    for (size_t k = shown; k < s->n; k++) {
        pc_op op;
        pc_cost c;
        pc_roofline r;
        row_again(s, s->order[k].i, &op, &c, &r);
        f += c.flops;
        b += c.bytes;
        tm += r.time;
    }
    cJSON *x = cJSON_AddObjectToObject(o, "others");
    cJSON_AddNumberToObject(x, "ops", (double)(s->n - shown));
    cJSON_AddNumberToObject(x, "flops", f);
    cJSON_AddNumberToObject(x, "bytes", b);
    cJSON_AddNumberToObject(x, "time", tm);
    cJSON_AddNumberToObject(x, "share", total > 0 ? tm / total : 0);
}

/* "plot" (requested): the chip's roof and every op in program order, whatever 'top' shows:
 * what a roofline picture draws, from the one run that makes the rest of the document;
 * 'plot' "chip": the chip only ("ops" null). */
static void json_plot(cJSON *o, const pc_chip *chip, pc_prec head, const roof_set *s,
                      int with_ops) {
    cJSON *x = cJSON_AddObjectToObject(o, "plot");
    cJSON *c = cJSON_AddObjectToObject(x, "chip");
    cJSON_AddStringToObject(c, "name", chip->name);
    cJSON_AddStringToObject(c, "full_name", chip->full_name);
    cJSON_AddNumberToObject(c, "peak_flops", pc_chip_flops(chip, head));
    cJSON_AddNumberToObject(c, "hbm_bw", chip->hbm_bw);
    cJSON_AddNumberToObject(c, "vector_flops", chip->vector_flops);
    if (!with_ops) {
        cJSON_AddNullToObject(x, "ops");
        return;
    }
    cJSON *arr = cJSON_AddArrayToObject(x, "ops");
    for (size_t i = 0; i < s->n; i++) {
        cJSON *p = cJSON_CreateObject();
        pc_op op;
        pc_cost cost;
        pc_roofline r;
        row_again(s, i, &op, &cost, &r);
        cJSON_AddStringToObject(p, "name", row_label(s, i));
        cJSON_AddStringToObject(p, "kind", row_kind(s, i));
        cJSON_AddNumberToObject(p, "flops", cost.flops);
        cJSON_AddNumberToObject(p, "intensity", r.intensity);
        cJSON_AddNumberToObject(p, "time", r.time);
        cJSON_AddStringToObject(p, "bound", pc_bound_name(r.bound));
        cJSON_AddItemToArray(arr, p);
    }
}

static cJSON *roof_doc(const roof_req *a, const pc_chip *chip, const roof_set *s, size_t shown,
                       const roof_tot *t, const pc_hlo_cost *hc) {
    pc_prec head = s->head;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "chip", chip->name);
    cJSON_AddStringToObject(o, "dtype", pc_prec_name(head));
    cJSON_AddNumberToObject(o, "peak_flops", pc_chip_flops(chip, head));
    cJSON_AddNumberToObject(o, "hbm_bw", chip->hbm_bw);
    cJSON_AddNumberToObject(o, "critical_intensity",
                            pc_chip_critical_intensity(chip, head, PC_LINK_HBM));
    /* one shape for every input: keys that do not apply are null (docs/json.md) */
    if (hc)
        json_hlo_source(o, a, hc, s);
    else
        cJSON_AddNullToObject(o, "hlo");
    cJSON *arr = cJSON_AddArrayToObject(o, "ops");
    for (size_t k = 0; k < shown; k++)
        cJSON_AddItemToArray(arr, json_op(s, s->order[k].i, t->time));
    json_others(o, s, shown, t->time);
    cJSON_AddNumberToObject(o, "bf16_rate_fallbacks", s->prec_fallbacks);
    json_totals(o, t);
    cJSON_AddNullToObject(o, "svg"); /* the command's --svg sets it */
    if (a->plot) json_plot(o, chip, head, s, a->plot == 1);
    return o;
}

/* ---- the query -------------------------------------------------------------------------- */

static pc_status load_hlo(const roof_req *a, pc_progress_fn fn, void *user, pc_hlo_cost **hc,
                          pc_error *err) {
    pc_hlo_cost_opts o = pc_hlo_cost_opts_default();
    o.progress = fn, o.progress_user = user; /* "bytes read", "bytes parsed" of a large file */
    o.module = (int)a->module;
    o.while_trips = a->while_trips;
    o.loop_ops = a->loop_ops;
    if (a->max_memory > 0) o.max_memory = (uint64_t)a->max_memory; /* else PC_MEMORY_AUTO */
    if (a->hlo_text)
        return pc_hlo_cost_text(a->hlo_text, strlen(a->hlo_text), "hlo_text", &o, hc, err);
    if (!a->stage) return pc_hlo_cost_file(a->hlo, &o, hc, err);
    /* an XLA dump directory: its modules after (default) or before optimizations */
    char pat[4096];
    struct stat sb;
    if (strcmp(a->stage, "after") && strcmp(a->stage, "before"))
        return pc_fail(err, PC_ERR_ARG, "'stage' expects after or before, got '%s'", a->stage);
    if (stat(a->hlo, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return pc_fail(err, PC_ERR_ARG, "'stage' goes with an XLA dump directory; '%s' is not one",
                       a->hlo);
    size_t n = strlen(a->hlo);
    while (n > 1 && a->hlo[n - 1] == '/') n--;
    if ((size_t)snprintf(pat, sizeof pat, "%.*s/*%s_optimizations.txt", (int)n, a->hlo, a->stage) >=
        sizeof pat)
        return pc_fail(err, PC_ERR_ARG, "path too long: '%s'", a->hlo);
    return pc_hlo_cost_file(pat, &o, hc, err);
}

pc_status pc_q_roofline_progress(const char *request, pc_progress_fn fn, void *user, cJSON **out,
                                 pc_error *err) {
    cJSON *root;
    roof_req a;
    pc_status st = pc_qreq_parse(request, "roofline", ROOF_KEYS, &root, err);
    if (st != PC_OK) return st;
    pc_chipdb *db = NULL;
    const pc_chip *chip = NULL;
    pc_hlo_cost *hc = NULL;
    pc_op *file_ops = NULL;
    size_t nfile = 0;
    roof_set s;
    roof_tot t;
    memset(&s, 0, sizeof s);
    if ((st = read_req(root, &a, err)) == PC_OK)
        st = pc_q_open_chip(a.chips_file, a.chip, &db, &chip, err);
    if (st == PC_OK && a.ops) st = pc_ops_load(a.ops, &file_ops, &nfile, err);
    if (st == PC_OK && (a.hlo || a.hlo_text)) st = load_hlo(&a, fn, user, &hc, err);
    if (st == PC_OK) st = gather_ops(&a, chip, file_ops, nfile, hc, &s, err);
    if (st == PC_OK) st = price_collectives(&a, chip, hc, &s, err);
    if (st == PC_OK) st = eval_ops(chip, &s, &t, err);
    if (st == PC_OK) {
        size_t shown = make_order(&s, a.top);
        *out = roof_doc(&a, chip, &s, shown, &t, hc);
        if (!*out) st = pc_fail(err, PC_ERR_NOMEM, "out of memory");
    }
    set_free(&s);
    pc_hlo_cost_free(hc);
    pc_ops_free(file_ops);
    pc_chipdb_free(db);
    cJSON_Delete(root);
    return st;
}
