/* perfcast roofline: compute / memory / communication time of ops on a chip. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analytic_cli.h"
#include "perfcast/hlo_cost.h"
#include "plots.h"

static void roofline_help(FILE *f) {
    fprintf(f,
            "usage: perfcast roofline --chip NAME (--matmul B,D,F | --op SPEC | --ops FILE |\n"
            "                         --hlo FILE)... [--dtype bf16] [--weight-dtype int8]\n"
            "                         [--comm-bw B/s] [--top N] [--module N] [--while-trips N]\n"
            "                         [--loop-ops] [--mesh AxB] [--svg FILE] [--json]\n"
            "                         [--chips-file FILE]\n\n"
            "Roofline time of each op on one chip (scaling_book.md §2): T_math = FLOPs / peak,\n"
            "T_hbm = bytes / HBM bandwidth, T_comm = comm bytes / link bandwidth; the op takes\n"
            "the largest (perfect overlap) and is bound by it. Prints arithmetic intensity\n"
            "(FLOPs/byte) against the chip's critical intensity (peak / HBM bandwidth).\n\n"
            "  --chip NAME       a chip of 'perfcast chips' (v5e, v5p, h100, ...)\n"
            "  --matmul B,D,F    [B,D] @ [D,F] (B = tokens); repeatable\n"
            "  --op SPEC         one op, e.g. 'elementwise shape=8192x4096 inputs=2'; repeatable\n"
            "  --ops FILE        ops, one per line, or JSON (docs/analytic.md):\n"
            "                      matmul m=8192 k=4096 n=14336 [batch=N] [wdtype=int8]\n"
            "                      elementwise shape=AxB [inputs=2] [flops=1]\n"
            "                      reduce shape=AxB [axis=1]   transpose shape=AxB\n"
            "                      gather table=ROWSxWIDTH indices=N\n"
            "                      conv input=NxHxWxC kernel=3x3 out=C [stride=1]\n"
            "                      raw flops=1e12 bytes=4e9\n"
            "                    any op: name= dtype= wdtype= count= comm=BYTES\n"
            "  --hlo FILE        every instruction of an XLA HLO module's entry computation\n"
            "                    (fusions, calls and loops as one op each): HLO text (.hlo,\n"
            "                    .txt) or a raw TpuGraphs tuning proto / HloModuleProto (.pb),\n"
            "                    or an XLA dump directory (its *after_optimizations.txt)\n"
            "  --stage S         with --hlo DUMP_DIR: after (default) or before optimizations\n"
            "  --module N        with --hlo: only the N-th module of the file (default: all)\n"
            "  --while-trips N   with --hlo: times a while body runs when the loop does not\n"
            "                    say (known_trip_count in backend_config, or a counter\n"
            "                    compared LT with a constant); default 1\n"
            "  --loop-ops        with --hlo: a while's body ops as rows (LOOP/op, times the\n"
            "                    trip count) instead of one row per loop\n"
            "  --mesh AxB[xC]    with --hlo: the devices of the collectives, numbered row-major;\n"
            "                    a replica group's devices pick the mesh axes it runs over (TPU:\n"
            "                    torus axes; GPU: NVLink within a domain of the chip's\n"
            "                    nvlink_domain GPUs, InfiniBand beyond). Default: each group\n"
            "                    as a 1-D mesh of its own devices\n"
            "  --top N           print the N slowest ops, the rest as one line (default 10;\n"
            "                    0: every op, in program order; --svg: number and list them)\n"
            "  --dtype P         compute/activation precision of --matmul/--op (default bf16;\n"
            "                    fp32 tf32 bf16 fp16 fp8 int8 int4 fp4); given with --hlo, the\n"
            "                    rate of every dot/convolution (default: their operand type)\n"
            "  --weight-dtype P  weight precision of --matmul/--op (default: --dtype;\n"
            "                    --wdtype is the deprecated spelling)\n"
            "  --comm-bw B/s     link bandwidth for comm bytes (default: one ICI axis\n"
            "                    bidirectional on TPUs, NVLink on GPUs)\n"
            "  --svg FILE        write a log-log roofline plot: one marker per op, its area the\n"
            "                    op's share of the time, its colour the bound\n"
            "  --json            machine-readable output\n"
            "  --chips-file F    extra or overridden chips (see 'perfcast chips --help')\n");
}

#define MAX_SPECS 256

typedef struct roof_args {
    const char *chip_name, *ops_file, *svg, *chips_file, *hlo, *stage;
    const char *dtype, *wdtype;
    int dtype_set, json;
    const char *specs[MAX_SPECS];
    int spec_is_matmul[MAX_SPECS];
    int nspecs;
    long long top, module;
    double comm_bw, while_trips;
    int loop_ops;
    const char *mesh;
} roof_args;

/* All ops of one run, with the per-op results. */
typedef struct roof_set {
    size_t n;
    pc_op *ops;
    pc_cost *costs;
    pc_roofline *rl;
    const char **label; /* full names (HLO names may be longer than pc_op.name) */
    const char **kind;  /* pc_op_kind_name or the HLO opcode */
    int *vector;        /* -1: as pc_op_cost says; 0/1: HLO matrix or vector op */
    const pc_hlo_op_cost **hlo; /* the HLO row or NULL */
    double *comm_bw;    /* per op: the link rate that gives its collectives' time; 0 default */
    size_t *order;      /* print order */
    int prec_fallbacks; /* HLO dots/convolutions counted at the bf16 rate */
    size_t hlo_base;    /* index of the first HLO row */
    /* the HLO collectives, priced by pc_collective_cost */
    double coll_time;              /* sum of count x time */
    int64_t coll_skipped;          /* over all devices without --mesh: not priced */
    int64_t coll_unaligned;        /* groups that are not whole --mesh axes: priced 1-D */
    char networks[64];             /* the networks used, comma-separated */
} roof_set;

typedef struct roof_tot {
    double time, tc, tm, tx;           /* sum of op times; by each op's bound */
    double t_math, t_mem, t_comm;      /* sums of each term */
    double flops, bytes, comm;
    pc_bound bound;                    /* the largest summed term */
} roof_tot;

/* ---- arguments ------------------------------------------------------------------ */

static int parse_num_opt(int c, const char *arg, roof_args *a) {
    long long v;
    pc_error e;
    switch (c) {
    case 'b':
        if (pc_parse_bytes(arg, &a->comm_bw, &e) || !(a->comm_bw > 0))
            return pc_cli_usage_error("roofline",
                                      "--comm-bw expects bytes/s > 0 like 4.5e10, got '%s'", arg);
        return -1;
    case 't':
        if (pc_cli_parse_i64(arg, 0, 1000000000, &v))
            return pc_cli_usage_error("roofline", "--top expects an integer >= 0 (0: all), got '%s'",
                                      arg);
        a->top = v;
        return -1;
    case 'M':
        if (pc_cli_parse_i64(arg, 0, 1000000000, &v))
            return pc_cli_usage_error("roofline", "--module expects an index >= 0, got '%s'", arg);
        a->module = v;
        return -1;
    default: {
        char *end;
        a->while_trips = strtod(arg, &end);
        if (end == arg || *end || !(a->while_trips >= 1) || !isfinite(a->while_trips))
            return pc_cli_usage_error("roofline", "--while-trips expects a number >= 1, got '%s'",
                                      arg);
        return -1;
    }
    }
}

static int parse_args(int argc, char **argv, roof_args *a) {
    static const struct option opts[] = {
        {"chip", required_argument, 0, 'c'},    {"matmul", required_argument, 0, 'm'},
        {"op", required_argument, 0, 'o'},      {"ops", required_argument, 0, 'O'},
        {"dtype", required_argument, 0, 'd'},   {"wdtype", required_argument, 0, 'X'},
        {"comm-bw", required_argument, 0, 'b'}, {"svg", required_argument, 0, 's'},
        {"json", no_argument, 0, 'j'},          {"chips-file", required_argument, 0, 'f'},
        {"hlo", required_argument, 0, 'H'},     {"top", required_argument, 0, 't'},
        {"module", required_argument, 0, 'M'},  {"while-trips", required_argument, 0, 'W'},
        {"loop-ops", no_argument, 0, 'L'},      {"mesh", required_argument, 0, 'G'},
        {"stage", required_argument, 0, 'S'},   {"weight-dtype", required_argument, 0, 'w'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    int c, rc;
    a->dtype = "bf16";
    a->module = -1;
    a->while_trips = 1;
    a->top = 10;
    optind = 1;
    opterr = 0;
    while ((c = pc_cli_getopt(argc, argv, "c:m:o:O:d:w:b:s:jf:H:t:M:W:LS:h", opts, NULL)) != -1) {
        switch (c) {
        case 'c': a->chip_name = optarg; break;
        case 'm':
        case 'o':
            if (a->nspecs == MAX_SPECS)
                return pc_cli_usage_error("roofline", "more than %d --matmul/--op; use --ops FILE",
                                          MAX_SPECS);
            a->spec_is_matmul[a->nspecs] = c == 'm';
            a->specs[a->nspecs++] = optarg;
            break;
        case 'O': a->ops_file = optarg; break;
        case 'd': a->dtype = optarg, a->dtype_set = 1; break;
        case 'X':
            pc_cli_deprecated("roofline", "--wdtype", "--weight-dtype");
            a->wdtype = optarg;
            break;
        case 'w': a->wdtype = optarg; break;
        case 'b':
        case 't':
        case 'M':
        case 'W':
            if ((rc = parse_num_opt(c, optarg, a)) >= 0) return rc;
            break;
        case 's': a->svg = optarg; break;
        case 'j': a->json = 1; break;
        case 'f': a->chips_file = optarg; break;
        case 'H': a->hlo = optarg; break;
        case 'L': a->loop_ops = 1; break;
        case 'G': a->mesh = optarg; break;
        case 'S': a->stage = optarg; break;
        case 'h': roofline_help(stdout); return PC_EXIT_OK;
        default: return pc_cli_usage_error("roofline", "unknown option '%s'", argv[optind - 1]);
        }
    }
    return -1;
}

static int check_args(int argc, char **argv, const roof_args *a) {
    static const char precs[] = "(fp32 tf32 bf16 fp16 fp8 int8 int4 fp4)";
    if (optind < argc)
        return pc_cli_usage_error("roofline", "unexpected argument '%s'", argv[optind]);
    if (!a->chip_name)
        return pc_cli_usage_error("roofline", "--chip NAME is required (see 'perfcast chips')");
    if (!a->nspecs && !a->ops_file && !a->hlo)
        return pc_cli_usage_error("roofline",
                                  "give ops: --matmul B,D,F, --op SPEC, --ops FILE or --hlo FILE");
    if (!a->hlo && (a->module >= 0 || a->while_trips != 1 || a->loop_ops || a->mesh))
        return pc_cli_usage_error("roofline",
                                  "--module, --while-trips, --loop-ops and --mesh go with --hlo FILE");
    if (pc_prec_parse(a->dtype) < 0)
        return pc_cli_usage_error("roofline", "--dtype '%s' unknown %s", a->dtype, precs);
    if (a->wdtype && pc_prec_parse(a->wdtype) < 0)
        return pc_cli_usage_error("roofline", "--weight-dtype '%s' unknown %s", a->wdtype, precs);
    if (a->svg) {
        const char *in[3] = {a->hlo, a->ops_file, a->chips_file};
        int rc = pc_cli_check_not_input("roofline", "--svg", a->svg, in, 3);
        if (rc < 0) rc = pc_cli_check_out_file("roofline", "--svg", a->svg);
        if (rc >= 0) return rc;
    }
    return -1;
}

/* ---- gathering ops ---------------------------------------------------------------- */

static int set_alloc(roof_set *s, size_t n) {
    s->n = n;
    s->ops = calloc(n + 1, sizeof *s->ops);
    s->costs = calloc(n + 1, sizeof *s->costs);
    s->rl = calloc(n + 1, sizeof *s->rl);
    s->label = calloc(n + 1, sizeof *s->label);
    s->kind = calloc(n + 1, sizeof *s->kind);
    s->vector = calloc(n + 1, sizeof *s->vector);
    s->hlo = calloc(n + 1, sizeof *s->hlo);
    s->order = calloc(n + 1, sizeof *s->order);
    s->comm_bw = calloc(n + 1, sizeof *s->comm_bw);
    return s->ops && s->costs && s->rl && s->label && s->kind && s->vector && s->hlo && s->order &&
           s->comm_bw;
}

static void set_free(roof_set *s) {
    free(s->ops);
    free(s->costs);
    free(s->rl);
    free(s->label);
    free(s->kind);
    free(s->vector);
    free(s->hlo);
    free(s->order);
    free(s->comm_bw);
}

/* One --matmul/--op spec as an op line. */
static int spec_op(const roof_args *a, int i, pc_op *op) {
    char line[1100];
    pc_error e;
    const char *wd = a->wdtype ? a->wdtype : "";
    if (a->spec_is_matmul[i]) {
        char dims[256];
        snprintf(dims, sizeof dims, "%s", a->specs[i]);
        for (char *p = dims; *p; p++)
            if (*p == ',') *p = 'x';
        snprintf(line, sizeof line, "matmul dtype=%s%s%s shape=%s name=matmul%d", a->dtype,
                 a->wdtype ? " wdtype=" : "", wd, dims, i);
    } else {
        const char *sp = a->specs[i];
        snprintf(line, sizeof line, "%.*s", (int)strcspn(sp, " \t"), sp);
        size_t l = strlen(line);
        snprintf(line + l, sizeof line - l, " dtype=%s%s%s name=op%d %s", a->dtype,
                 a->wdtype ? " wdtype=" : "", wd, i, sp + strcspn(sp, " \t"));
    }
    if (pc_op_parse_line(line, op, &e) != PC_OK)
        return pc_cli_usage_error("roofline", "%s '%s': %s",
                                  a->spec_is_matmul[i] ? "--matmul" : "--op", a->specs[i], e.msg);
    return -1;
}

/* The analytic precision of an XLA element type. */
static pc_prec prec_of_type(int32_t t) {
    switch (t) {
    case 16: return PC_PREC_BF16;
    case 10: return PC_PREC_FP16;
    case 2:
    case 6: return PC_PREC_INT8;
    case 19: case 20: case 23: case 24: case 25: case 28: case 29: case 33: return PC_PREC_FP8;
    case 21:
    case 22: return PC_PREC_INT4;
    case 32: return PC_PREC_FP4;
    default: return PC_PREC_FP32;
    }
}

/* One HLO row as a raw op: its FLOPs and bytes, its precision, matrix or vector unit. */
static void hlo_op(const roof_args *a, const pc_chip *chip, const pc_hlo_op_cost *h, roof_set *s,
                   size_t i) {
    pc_op *op = &s->ops[i];
    *op = pc_op_init(PC_OP_RAW);
    snprintf(op->name, sizeof op->name, "%s", h->name);
    op->flops = h->flops;
    op->bytes = h->bytes_read + h->bytes_written;
    op->prec = prec_of_type(h->compute_type);
    if (h->matrix && a->dtype_set) op->prec = (pc_prec)pc_prec_parse(a->dtype);
    if (h->matrix && pc_chip_flops(chip, op->prec) <= 0) { /* e.g. f32 dots on a TPU */
        op->prec = PC_PREC_BF16;
        s->prec_fallbacks++;
    }
    op->wprec = op->prec;
    s->label[i] = h->name;
    s->kind[i] = h->opcode;
    s->vector[i] = !h->matrix;
    s->hlo[i] = h;
}

static int gather_ops(const roof_args *a, const pc_chip *chip, const pc_op *file_ops,
                      size_t nfile, const pc_hlo_cost *hc, roof_set *s) {
    size_t nh = hc ? (size_t)hc->n_ops : 0, base = (size_t)a->nspecs + nfile;
    if (!set_alloc(s, base + nh)) {
        fprintf(stderr, "perfcast roofline: error: out of memory\n");
        return PC_EXIT_FAIL;
    }
    for (int i = 0; i < a->nspecs; i++) {
        int rc = spec_op(a, i, &s->ops[i]);
        if (rc >= 0) return rc;
    }
    if (nfile) memcpy(s->ops + a->nspecs, file_ops, nfile * sizeof *s->ops);
    for (size_t i = 0; i < base; i++) {
        s->label[i] = s->ops[i].name;
        s->kind[i] = pc_op_kind_name(s->ops[i].kind);
        s->vector[i] = -1;
    }
    for (size_t i = 0; i < nh; i++) hlo_op(a, chip, &hc->ops[i], s, base + i);
    s->hlo_base = base;
    return -1;
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

/* One collective's time over the --mesh axes its group spans, else over its group as a
 * 1-D mesh. 1: not priced (all devices, no --mesh); -1 priced; else an exit code. */
static int coll_time(const pc_chip *chip, const pc_mesh *mesh, const pc_hlo_collective *c,
                     roof_set *s, double *t) {
    pc_mesh m1;
    pc_error e;
    unsigned mask = 1;
    const pc_mesh *m = mesh;
    if (!mesh || group_axes(mesh, c, &mask)) {
        if (c->group_size <= 0) return 1;
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
    return -1;
fail:
    pc_cli_flags(e.msg, sizeof e.msg);
    fprintf(stderr, "perfcast roofline: error: collective %s (%s): %s\n", c->name,
            pc_hlo_coll_name(c->kind), e.msg);
    return PC_EXIT_FAIL;
}

/* Each HLO row's communication: its collectives' time (count x pc_collective_cost) as the
 * comm bytes over the rate that gives that time. */
static int price_collectives(const roof_args *a, const pc_chip *chip, const pc_hlo_cost *hc,
                             roof_set *s) {
    pc_mesh mesh;
    pc_error e;
    if (!hc || !hc->n_collectives) return -1;
    if (a->mesh && (pc_mesh_parse(a->mesh, &mesh, &e) != PC_OK ||
                    pc_mesh_check(chip, &mesh, &e) != PC_OK))
        return pc_cli_usage_error("roofline", "--mesh '%s': %s", a->mesh, e.msg);
    double *row_t = calloc((size_t)hc->n_ops + 1, sizeof *row_t);
    if (!row_t) {
        fprintf(stderr, "perfcast roofline: error: out of memory\n");
        return PC_EXIT_FAIL;
    }
    for (int64_t k = 0; k < hc->n_collectives; k++) {
        const pc_hlo_collective *c = &hc->collectives[k];
        double t = 0;
        int rc = coll_time(chip, a->mesh ? &mesh : NULL, c, s, &t);
        if (rc >= 0 && rc != 1) {
            free(row_t);
            return rc;
        }
        s->coll_skipped += rc == 1;
        if (c->op >= 0 && c->op < hc->n_ops) row_t[c->op] += c->count * t;
        s->coll_time += c->count * t;
    }
    for (int64_t i = 0; i < hc->n_ops; i++) {
        pc_op *op = &s->ops[s->hlo_base + (size_t)i];
        op->comm_bytes = row_t[i] > 0 ? hc->ops[i].comm_bytes : 0;
        s->comm_bw[s->hlo_base + (size_t)i] = row_t[i] > 0 ? hc->ops[i].comm_bytes / row_t[i] : 0;
    }
    free(row_t);
    return -1;
}

/* ---- evaluation --------------------------------------------------------------------- */

static int eval_ops(const pc_chip *chip, double comm_bw, roof_set *s, roof_tot *t) {
    pc_error e;
    memset(t, 0, sizeof *t);
    for (size_t i = 0; i < s->n; i++) {
        if (pc_op_cost(&s->ops[i], &s->costs[i], &e) == PC_OK) {
            if (s->vector[i] >= 0) s->costs[i].vector = s->vector[i];
            double bw = s->comm_bw[i] > 0 ? s->comm_bw[i] : comm_bw;
            if (pc_roofline_eval(chip, &s->costs[i], bw, &s->rl[i], &e) == PC_OK) {
                const pc_roofline *r = &s->rl[i];
                t->time += r->time;
                t->t_math += r->t_compute;
                t->t_mem += r->t_memory;
                t->t_comm += r->t_comm;
                t->flops += s->costs[i].flops;
                t->bytes += s->costs[i].bytes;
                t->comm += s->costs[i].comm_bytes;
                *(r->bound == PC_BOUND_COMPUTE ? &t->tc : r->bound == PC_BOUND_MEMORY ? &t->tm
                                                                                      : &t->tx) +=
                    r->time;
                continue;
            }
        }
        pc_cli_flags(e.msg, sizeof e.msg);
        fprintf(stderr, "perfcast roofline: error: %s: %s\n", s->label[i], e.msg);
        return PC_EXIT_FAIL;
    }
    t->bound = t->t_math >= t->t_mem && t->t_math >= t->t_comm ? PC_BOUND_COMPUTE
               : t->t_mem >= t->t_comm                          ? PC_BOUND_MEMORY
                                                                : PC_BOUND_COMM;
    return -1;
}

typedef struct timed {
    double time;
    size_t i;
} timed;

static int by_time_desc(const void *x, const void *y) {
    const timed *a = x, *b = y;
    if (a->time != b->time) return a->time < b->time ? 1 : -1;
    return (a->i > b->i) - (a->i < b->i);
}

/* Print order: as given, or slowest first with --top. Returns the rows to print. */
static size_t make_order(roof_set *s, long long top) {
    for (size_t i = 0; i < s->n; i++) s->order[i] = i;
    if (top <= 0 || (size_t)top >= s->n) return s->n;
    timed *v = calloc(s->n, sizeof *v);
    if (!v) return s->n; /* out of memory: print everything in order */
    for (size_t i = 0; i < s->n; i++) v[i] = (timed){s->rl[i].time, i};
    qsort(v, s->n, sizeof *v, by_time_desc);
    for (size_t i = 0; i < s->n; i++) s->order[i] = v[i].i;
    free(v);
    return (size_t)top;
}

/* The precision of the op with the most FLOPs among those the chip has a rate for (the
 * plot's roof and the header); bf16 when none (e.g. only f32 vector ops on a TPU). */
static pc_prec head_prec(const pc_chip *chip, const roof_set *s) {
    size_t best = s->n;
    for (size_t i = 0; i < s->n; i++)
        if (pc_chip_flops(chip, s->ops[i].prec) > 0 &&
            (best == s->n || s->costs[i].flops > s->costs[best].flops))
            best = i;
    if (best < s->n) return s->ops[best].prec;
    return pc_chip_flops(chip, PC_PREC_BF16) > 0 || !s->n ? PC_PREC_BF16 : s->ops[0].prec;
}

/* ---- output ----------------------------------------------------------------------------- */

/* --svg: every op, the --top slowest (default 10) numbered and listed. */
static int write_svg(const char *path, const pc_chip *chip, pc_prec head, const roof_set *s,
                     long long top) {
    pc_plot_roof_op *pts = calloc(s->n + 1, sizeof *pts);
    if (!pts) {
        fprintf(stderr, "perfcast roofline: error: out of memory\n");
        return PC_EXIT_FAIL;
    }
    for (size_t i = 0; i < s->n; i++) {
        pts[i].label = s->label[i];
        pts[i].kind = s->kind[i];
        pts[i].intensity = s->costs[i].flops > 0 ? s->rl[i].intensity : 0;
        pts[i].rate = s->rl[i].time > 0 ? s->costs[i].flops / s->rl[i].time : 0;
        pts[i].time = s->rl[i].time;
        pts[i].bound = s->rl[i].bound;
    }
    int rc = pc_plot_roofline(path, chip, head, pts, s->n, top > 0 ? (size_t)top : 10);
    free(pts);
    return rc;
}

static cJSON *json_op(const roof_set *s, size_t i, double total) {
    cJSON *x = cJSON_CreateObject();
    const pc_roofline *r = &s->rl[i];
    cJSON_AddStringToObject(x, "name", s->label[i]);
    cJSON_AddStringToObject(x, "kind", s->kind[i]);
    cJSON_AddStringToObject(x, "dtype", pc_prec_name(s->ops[i].prec));
    cJSON_AddNumberToObject(x, "flops", s->costs[i].flops);
    cJSON_AddNumberToObject(x, "bytes", s->costs[i].bytes);
    if (s->hlo[i]) {
        const pc_hlo_op_cost *h = s->hlo[i];
        cJSON_AddNumberToObject(x, "module", h->module);
        cJSON_AddStringToObject(x, "element_type", pc_hlo_type_name(h->element_type));
        cJSON_AddBoolToObject(x, "matrix", h->matrix);
        cJSON_AddNumberToObject(x, "bytes_read", h->bytes_read);
        cJSON_AddNumberToObject(x, "bytes_written", h->bytes_written);
        cJSON_AddNumberToObject(x, "transcendentals", h->transcendentals);
        cJSON_AddNumberToObject(x, "trips", h->trips);
        cJSON_AddNumberToObject(x, "collectives", (double)h->collectives);
    }
    cJSON_AddNumberToObject(x, "comm_bytes", s->costs[i].comm_bytes);
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

/* The ops after the first `shown` of the print order, summed. */
static void others_sum(const roof_set *s, size_t shown, double *flops, double *bytes,
                       double *time) {
    *flops = *bytes = *time = 0;
    for (size_t k = shown; k < s->n; k++) {
        size_t i = s->order[k];
        *flops += s->costs[i].flops;
        *bytes += s->costs[i].bytes;
        *time += s->rl[i].time;
    }
}

static void json_hlo_source(cJSON *o, const roof_args *a, const pc_hlo_cost *hc) {
    cJSON *h = cJSON_AddObjectToObject(o, "hlo");
    cJSON_AddStringToObject(h, "file", a->hlo);
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
    cJSON *cs = cJSON_AddArrayToObject(h, "collectives");
    for (int64_t k = 0; k < hc->n_collectives; k++) {
        const pc_hlo_collective *c = &hc->collectives[k];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "name", c->name);
        cJSON_AddStringToObject(x, "kind", pc_hlo_coll_name(c->kind));
        cJSON_AddStringToObject(x, "op", c->op >= 0 && c->op < hc->n_ops ? hc->ops[c->op].name : "");
        cJSON_AddNumberToObject(x, "bytes", c->bytes);
        cJSON_AddNumberToObject(x, "count", c->count);
        cJSON_AddNumberToObject(x, "group_size", (double)c->group_size);
        cJSON_AddNumberToObject(x, "groups", (double)c->n_groups);
        cJSON_AddItemToArray(cs, x);
    }
    cJSON_AddNumberToObject(h, "unsized_tuples", (double)hc->unsized);
    cJSON_AddNumberToObject(h, "dots_without_dims", (double)hc->dots_guessed);
    cJSON_AddNumberToObject(h, "unknown_ops", (double)hc->unknown_ops);
    cJSON_AddNumberToObject(h, "flops", hc->flops);
    cJSON_AddNumberToObject(h, "transcendentals", hc->transcendentals);
    cJSON_AddNumberToObject(h, "bytes_read", hc->bytes_read);
    cJSON_AddNumberToObject(h, "bytes_written", hc->bytes_written);
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

static void print_json(const roof_args *a, const pc_chip *chip, pc_prec head, const roof_set *s,
                       size_t shown, const roof_tot *t, const pc_hlo_cost *hc) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "chip", chip->name);
    cJSON_AddStringToObject(o, "dtype", pc_prec_name(head));
    cJSON_AddNumberToObject(o, "peak_flops", pc_chip_flops(chip, head));
    cJSON_AddNumberToObject(o, "hbm_bw", chip->hbm_bw);
    cJSON_AddNumberToObject(o, "critical_intensity",
                            pc_chip_critical_intensity(chip, head, PC_LINK_HBM));
    /* one shape for every input: keys that do not apply are null (docs/json.md) */
    if (hc) json_hlo_source(o, a, hc);
    else cJSON_AddNullToObject(o, "hlo");
    cJSON *arr = cJSON_AddArrayToObject(o, "ops");
    for (size_t k = 0; k < shown; k++) cJSON_AddItemToArray(arr, json_op(s, s->order[k], t->time));
    if (shown < s->n) {
        double f, b, tm;
        others_sum(s, shown, &f, &b, &tm);
        cJSON *x = cJSON_AddObjectToObject(o, "others");
        cJSON_AddNumberToObject(x, "ops", (double)(s->n - shown));
        cJSON_AddNumberToObject(x, "flops", f);
        cJSON_AddNumberToObject(x, "bytes", b);
        cJSON_AddNumberToObject(x, "time", tm);
        cJSON_AddNumberToObject(x, "share", t->time > 0 ? tm / t->time : 0);
    } else {
        cJSON_AddNullToObject(o, "others");
    }
    cJSON_AddNumberToObject(o, "bf16_rate_fallbacks", s->prec_fallbacks);
    json_totals(o, t);
    if (a->svg) cJSON_AddStringToObject(o, "svg", a->svg);
    else cJSON_AddNullToObject(o, "svg");
    char *str = cJSON_Print(o);
    if (str) puts(str);
    free(str);
    cJSON_Delete(o);
}

static void print_hlo_header(const roof_args *a, const pc_chip *chip, const roof_set *s,
                             const pc_hlo_cost *hc) {
    printf("%s (%s, %d module%s): %lld instructions in the entry, %lld ops costed, %lld free "
           "(parameter, constant, tuple, bitcast, ...)\n",
           a->hlo, hc->format, (int)hc->n_modules, hc->n_modules == 1 ? "" : "s",
           (long long)hc->instructions, (long long)hc->n_ops, (long long)hc->free_ops);
    if (!hc->n_ops)
        printf("note: nothing to cost in the entry computation (no FLOPs, HBM bytes or "
               "collectives): the roofline is zero\n");
    if (hc->while_loops)
        printf("note: %lld while loop(s): %lld with known_trip_count, %lld counted from the loop "
               "(counter < constant), %lld at --while-trips %g\n",
               (long long)hc->while_loops, (long long)hc->loops_known,
               (long long)hc->loops_counted, (long long)hc->loops_fallback, a->while_trips);
    if (hc->library_calls)
        printf("note: %lld cuBLAS/cuDNN custom-call(s) costed as GEMMs/convolutions\n",
               (long long)hc->library_calls);
    if (hc->n_collectives) {
        char b[32], t[32];
        printf("note: %lld collective(s), %s moved, T_comm %s%s%s (communication, not HBM "
               "bytes)\n",
               (long long)hc->n_collectives, pc_acli_si(hc->comm_bytes, "B", b, sizeof b),
               pc_acli_time(s->coll_time, t, sizeof t), s->networks[0] ? " over " : "",
               s->networks);
    }
    if (s->coll_skipped)
        printf("note: %lld collective(s) over all devices (replica_groups={}) not priced: give "
               "--mesh\n", (long long)s->coll_skipped);
    if (s->coll_unaligned)
        printf("note: %lld collective(s) whose group is not whole --mesh axes: priced over the "
               "group as a 1-D mesh\n", (long long)s->coll_unaligned);
    if (hc->unsized)
        printf("note: %lld tuple value(s) of unknown size counted as 0 bytes\n",
               (long long)hc->unsized);
    if (hc->dots_guessed)
        printf("note: %lld dot(s) without dimension numbers: lhs's last dim contracted\n",
               (long long)hc->dots_guessed);
    if (hc->unknown_ops)
        printf("note: %lld op(s) without a FLOP rule (first: %s): bytes only\n",
               (long long)hc->unknown_ops, hc->first_unknown);
    if (s->prec_fallbacks)
        printf("note: %d dot/convolution op(s) in a precision %s has no rate for (e.g. f32): "
               "counted at the bf16 rate (--dtype to choose)\n",
               s->prec_fallbacks, chip->name);
}

static void print_row(const roof_set *s, size_t i, double total) {
    char t[32], name[21];
    snprintf(name, sizeof name, "%s", s->label[i]);
    if (strlen(s->label[i]) > 20) memcpy(name + 17, "...", 4);
    printf("%-20s %-11.11s %-5s %10.3g %10.3g %10.4g %10s %-8s %5.1f%%\n", name, s->kind[i],
           pc_prec_name(s->ops[i].prec), s->costs[i].flops, s->costs[i].bytes, s->rl[i].intensity,
           pc_acli_time(s->rl[i].time, t, sizeof t), pc_bound_name(s->rl[i].bound),
           total > 0 ? 100 * s->rl[i].time / total : 0);
}

static void print_text(const roof_args *a, const pc_chip *chip, pc_prec head, const roof_set *s,
                       size_t shown, const roof_tot *t, const pc_hlo_cost *hc) {
    char x[64], y[64], tt[32];
    printf("chip %s (%s): %s %s, HBM %s -> critical intensity %.0f FLOPs/byte\n", chip->name,
           chip->full_name, pc_prec_name(head),
           pc_acli_si(pc_chip_flops(chip, head), "FLOP/s", x, sizeof x),
           pc_acli_si(chip->hbm_bw, "B/s", y, sizeof y),
           pc_chip_critical_intensity(chip, head, PC_LINK_HBM));
    if (hc) print_hlo_header(a, chip, s, hc);
    printf("%-20s %-11s %-5s %10s %10s %10s %10s %-8s %6s\n", "op", "kind", "dtype", "FLOPs",
           "bytes", "intensity", "time", "bound", "share");
    for (size_t k = 0; k < shown; k++) print_row(s, s->order[k], t->time);
    if (shown < s->n) {
        double f, b, tm;
        char name[32];
        others_sum(s, shown, &f, &b, &tm);
        snprintf(name, sizeof name, "(%zu others)", s->n - shown);
        printf("%-20s %-11s %-5s %10.3g %10.3g %10.4g %10s %-8s %5.1f%%\n", name, "", "", f, b,
               b > 0 ? f / b : 0, pc_acli_time(tm, tt, sizeof tt), "",
               t->time > 0 ? 100 * tm / t->time : 0);
    }
    printf("%-20s %-11s %-5s %10.3g %10.3g %10.4g %10s (compute %.0f%%, memory %.0f%%, comm "
           "%.0f%%)\n",
           "total", "", "", t->flops, t->bytes, t->bytes > 0 ? t->flops / t->bytes : 0,
           pc_acli_time(t->time, tt, sizeof tt), t->time > 0 ? 100 * t->tc / t->time : 0,
           t->time > 0 ? 100 * t->tm / t->time : 0, t->time > 0 ? 100 * t->tx / t->time : 0);
    char m1[32], m2[32];
    printf("overall: %s-bound (sum of T_math %s, of T_hbm %s", pc_bound_name(t->bound),
           pc_acli_time(t->t_math, m1, sizeof m1), pc_acli_time(t->t_mem, m2, sizeof m2));
    if (t->t_comm > 0) printf(", of T_comm %s", pc_acli_time(t->t_comm, tt, sizeof tt));
    printf(")\n");
    if (a->svg) printf("wrote %s\n", a->svg);
}

/* ---- the command ---------------------------------------------------------------------- */

static int load_inputs(const roof_args *a, pc_op **file_ops, size_t *nfile, pc_hlo_cost **hc) {
    pc_error e;
    pc_error_clear(&e);
    if (a->ops_file && pc_ops_load(a->ops_file, file_ops, nfile, &e) != PC_OK)
        return pc_cli_fail(&e);
    if (a->hlo) {
        pc_hlo_cost_opts o = pc_hlo_cost_opts_default();
        o.module = (int)a->module;
        o.while_trips = a->while_trips;
        o.loop_ops = a->loop_ops;
        char pat[4096];
        const char *path;
        int rc = pc_cli_hlo_stage_path("roofline", a->hlo, a->stage, pat, sizeof pat, &path);
        if (rc >= 0) return rc;
        if (pc_hlo_cost_file(path, &o, hc, &e) != PC_OK) return pc_cli_fail(&e);
    }
    return -1;
}

static int run(const roof_args *a, const pc_chip *chip, roof_set *s, pc_hlo_cost **hc,
               pc_op **file_ops) {
    size_t nfile = 0;
    roof_tot t;
    int rc = load_inputs(a, file_ops, &nfile, hc);
    if (rc < 0) rc = gather_ops(a, chip, *file_ops, nfile, *hc, s);
    if (rc < 0) rc = price_collectives(a, chip, *hc, s);
    if (rc < 0) rc = eval_ops(chip, a->comm_bw, s, &t);
    if (rc >= 0) return rc;
    size_t shown = make_order(s, a->top);
    pc_prec head = head_prec(chip, s);
    if (a->svg && (rc = write_svg(a->svg, chip, head, s, a->top)) >= 0) return rc;
    if (a->json)
        print_json(a, chip, head, s, shown, &t, *hc);
    else
        print_text(a, chip, head, s, shown, &t, *hc);
    return PC_EXIT_OK;
}

int pc_cmd_roofline(int argc, char **argv) {
    roof_args a;
    memset(&a, 0, sizeof a);
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0) return rc;
    if ((rc = check_args(argc, argv, &a)) >= 0) return rc;
    pc_chipdb *db;
    const pc_chip *chip;
    rc = pc_acli_open_chip("roofline", a.chips_file, a.chip_name, &db, &chip);
    if (rc >= 0) return rc;
    roof_set s;
    memset(&s, 0, sizeof s);
    pc_hlo_cost *hc = NULL;
    pc_op *file_ops = NULL;
    rc = run(&a, chip, &s, &hc, &file_ops);
    set_free(&s);
    pc_hlo_cost_free(hc);
    pc_ops_free(file_ops);
    pc_chipdb_free(db);
    return rc;
}
