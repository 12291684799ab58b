/*
 * Roofline model of one op (scaling_book.md §2) and simple op descriptions
 * (text lines or JSON). The roofline picture is the CLI's (src/cli/plot_roofline.c).
 */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analytic/analytic_internal.h"

#define PC_OP_MAX_SHAPE 8

/* Parse state of one op description. */
typedef struct op_parse {
    double shape[PC_OP_MAX_SHAPE];
    int shape_n, axis, wset;
} op_parse;

/* ---------------- small parsers shared by the module ---------------- */

int pc_analytic_parse_num(const char *s, int allow_suffix, double *out) {
    if (!s) return -1;
    while (isspace((unsigned char)*s)) s++;
    if (!*s) return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno == ERANGE) return -1;
    if (allow_suffix && *end && !isspace((unsigned char)*end)) {
        /* a unit: the one vocabulary (pc_parse_count), "8k" = 8000, "8Ki" = 8192 */
        char buf[64];
        size_t n = strcspn(s, " \t\r\n");
        if (n >= sizeof buf) return -1;
        memcpy(buf, s, n);
        buf[n] = '\0';
        if (pc_parse_count(buf, &v, NULL) != PC_OK) return -1;
        end = (char *)s + n;
    }
    while (isspace((unsigned char)*end)) end++;
    if (*end || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

/* ---------------- roofline ---------------- */

const char *pc_bound_name(pc_bound b) {
    switch (b) {
    case PC_BOUND_COMPUTE: return "compute";
    case PC_BOUND_MEMORY: return "memory";
    case PC_BOUND_COMM: return "comm";
    default: return "?";
    }
}

pc_status pc_roofline_eval(const pc_chip *chip, const pc_cost *cost, double comm_bw,
                           pc_roofline *out, pc_error *err) {
    memset(out, 0, sizeof *out);
    if (!chip || !cost) return pc_fail(err, PC_ERR_ARG, "pc_roofline_eval: NULL argument");
    if (!isfinite(cost->flops) || !isfinite(cost->bytes) || !isfinite(cost->comm_bytes) ||
        cost->flops < 0 || cost->bytes < 0 || cost->comm_bytes < 0)
        return pc_fail(err, PC_ERR_ARG, "flops, bytes and comm bytes must be finite and >= 0");
    if ((unsigned)cost->prec >= PC_PREC_COUNT)
        return pc_fail(err, PC_ERR_ARG, "bad precision %d", (int)cost->prec);
    double peak = 0;
    if (cost->vector && chip->vector_flops > 0) peak = chip->vector_flops;
    if (peak <= 0) peak = pc_chip_flops(chip, cost->prec);
    if (peak <= 0 && cost->vector) peak = pc_chip_flops(chip, PC_PREC_BF16);
    if (peak <= 0 && cost->flops > 0)
        return pc_fail(err, PC_ERR_UNSUPPORTED,
                       "chip %s has no %s FLOP/s rate; use another dtype (e.g. bf16%s) or give "
                       "flops.%s in the chip (pc_chip or chips JSON)",
                       chip->name, pc_prec_name(cost->prec),
                       chip->flops[PC_PREC_INT8] > 0 ? " or int8" : "", pc_prec_name(cost->prec));
    if (comm_bw <= 0)
        comm_bw = chip->kind == PC_CHIP_TPU ? pc_chip_ici_axis_bw(chip) : chip->nvlink_bw;
    if (cost->comm_bytes > 0 && !(comm_bw > 0))
        return pc_fail(err, PC_ERR_UNSUPPORTED,
                       "chip %s has no interconnect bandwidth for %.3g comm bytes; set ici_link_bw "
                       "or nvlink_bw in the chip (pc_chip or chips JSON)",
                       chip->name, cost->comm_bytes);
    out->peak_flops = peak;
    out->hbm_bw = chip->hbm_bw;
    out->comm_bw = comm_bw;
    out->intensity = cost->bytes > 0 ? cost->flops / cost->bytes : 0;
    out->critical_intensity = peak > 0 && chip->hbm_bw > 0 ? peak / chip->hbm_bw : 0;
    out->t_compute = cost->flops > 0 ? cost->flops / peak : 0;
    out->t_memory = cost->bytes > 0 ? cost->bytes / chip->hbm_bw : 0;
    out->t_comm = cost->comm_bytes > 0 ? cost->comm_bytes / comm_bw : 0;
    out->bound = PC_BOUND_COMPUTE;
    out->time = out->t_compute;
    if (out->t_memory > out->time) out->time = out->t_memory, out->bound = PC_BOUND_MEMORY;
    if (out->t_comm > out->time) out->time = out->t_comm, out->bound = PC_BOUND_COMM;
    out->time_upper = out->t_compute + out->t_memory + out->t_comm;
    return PC_OK;
}

/* ---------------- ops ---------------- */

static const char *const op_kind_names[PC_OP_KIND_COUNT] = {
    "matmul", "elementwise", "reduce", "transpose", "gather", "conv", "raw"};

const char *pc_op_kind_name(pc_op_kind k) {
    return (unsigned)k < PC_OP_KIND_COUNT ? op_kind_names[k] : "?";
}

static int op_kind_parse(const char *s) {
    for (int i = 0; i < PC_OP_KIND_COUNT; i++)
        if (pc_ascii_ieq(s, op_kind_names[i])) return i;
    if (pc_ascii_ieq(s, "dot") || pc_ascii_ieq(s, "gemm")) return PC_OP_MATMUL;
    if (pc_ascii_ieq(s, "eltwise") || pc_ascii_ieq(s, "ew")) return PC_OP_ELEMENTWISE;
    if (pc_ascii_ieq(s, "convolution")) return PC_OP_CONV;
    return -1;
}

pc_op pc_op_init(pc_op_kind kind) {
    pc_op op;
    memset(&op, 0, sizeof op);
    op.kind = kind;
    op.prec = PC_PREC_BF16;
    op.wprec = PC_PREC_BF16;
    op.count = 1;
    op.batch = 1;
    op.inputs = kind == PC_OP_ELEMENTWISE ? 2 : 1;
    op.flops_per_elem = 1;
    op.stride = 1;
    op.kh = op.kw = 1;
    return op;
}

static pc_status need(const pc_op *op, double v, const char *field, pc_error *err) {
    if (v > 0 && isfinite(v)) return PC_OK;
    return pc_fail(err, PC_ERR_ARG, "%s%s%s: '%s' must be given and > 0",
                   op->name[0] ? op->name : "", op->name[0] ? " " : "", pc_op_kind_name(op->kind),
                   field);
}

pc_status pc_op_cost(const pc_op *op, pc_cost *out, pc_error *err) {
    memset(out, 0, sizeof *out);
    if (!op) return pc_fail(err, PC_ERR_ARG, "pc_op_cost: NULL op");
    if ((unsigned)op->prec >= PC_PREC_COUNT || (unsigned)op->wprec >= PC_PREC_COUNT)
        return pc_fail(err, PC_ERR_ARG, "op %s: bad dtype", op->name);
    const double sa = pc_prec_bytes(op->prec), sw = pc_prec_bytes(op->wprec);
    double flops = 0, bytes = 0;
    int vector = 0;
    pc_status st = PC_OK;
    switch (op->kind) {
    case PC_OP_MATMUL:
        if ((st = need(op, op->m, "m", err)) || (st = need(op, op->k, "k", err)) ||
            (st = need(op, op->n, "n", err)) || (st = need(op, op->batch, "batch", err)))
            return st;
        flops = 2 * op->batch * op->m * op->k * op->n;
        bytes = op->batch * (op->m * op->k * sa + op->k * op->n * sw + op->m * op->n * sa);
        break;
    case PC_OP_ELEMENTWISE:
        if ((st = need(op, op->elems, "shape", err)) || (st = need(op, op->inputs, "inputs", err)))
            return st;
        if (!(op->flops_per_elem >= 0) || !isfinite(op->flops_per_elem))
            return pc_fail(err, PC_ERR_ARG, "elementwise %s: 'flops' must be >= 0", op->name);
        flops = op->elems * op->flops_per_elem;
        bytes = op->elems * sa * (op->inputs + 1);
        vector = 1;
        break;
    case PC_OP_REDUCE: {
        if ((st = need(op, op->elems, "shape", err)) ||
            (st = need(op, op->reduce_size, "reduce", err)))
            return st;
        if (op->reduce_size > op->elems)
            return pc_fail(err, PC_ERR_ARG,
                           "reduce %s: reduce size %.17g is larger than the %.17g "
                           "elements",
                           op->name, op->reduce_size, op->elems);
        flops = op->elems;
        bytes = (op->elems + op->elems / op->reduce_size) * sa;
        vector = 1;
        break;
    }
    case PC_OP_TRANSPOSE:
        if ((st = need(op, op->elems, "shape", err))) return st;
        bytes = 2 * op->elems * sa;
        vector = 1;
        break;
    case PC_OP_GATHER:
        if ((st = need(op, op->width, "table (or width)", err)) ||
            (st = need(op, op->indices, "indices", err)))
            return st;
        if (op->rows < 0 || !isfinite(op->rows))
            return pc_fail(err, PC_ERR_ARG, "gather %s: bad table rows", op->name);
        bytes = op->indices * op->width * sw + op->indices * 4 + op->indices * op->width * sa;
        vector = 1;
        break;
    case PC_OP_CONV: {
        if ((st = need(op, op->batch, "input (batch)", err)) ||
            (st = need(op, op->h, "input (h)", err)) || (st = need(op, op->w, "input (w)", err)) ||
            (st = need(op, op->cin, "input (channels)", err)) ||
            (st = need(op, op->cout, "out", err)) || (st = need(op, op->kh, "kernel", err)) ||
            (st = need(op, op->kw, "kernel", err)) || (st = need(op, op->stride, "stride", err)))
            return st;
        double oh = ceil(op->h / op->stride), ow = ceil(op->w / op->stride);
        flops = 2 * op->batch * oh * ow * op->cout * op->cin * op->kh * op->kw;
        bytes = op->batch * op->h * op->w * op->cin * sa +
                op->kh * op->kw * op->cin * op->cout * sw + op->batch * oh * ow * op->cout * sa;
        break;
    }
    case PC_OP_RAW:
        if (!(op->flops >= 0) || !(op->bytes >= 0) || !isfinite(op->flops) || !isfinite(op->bytes))
            return pc_fail(err, PC_ERR_ARG, "raw %s: 'flops' and 'bytes' must be >= 0", op->name);
        flops = op->flops;
        bytes = op->bytes;
        break;
    default: return pc_fail(err, PC_ERR_ARG, "op %s: bad kind %d", op->name, (int)op->kind);
    }
    if (!(op->count > 0) || !isfinite(op->count))
        return pc_fail(err, PC_ERR_ARG, "op %s: 'count' must be > 0", op->name);
    if (!(op->comm_bytes >= 0) || !isfinite(op->comm_bytes))
        return pc_fail(err, PC_ERR_ARG, "op %s: 'comm' must be >= 0", op->name);
    out->flops = flops * op->count;
    out->bytes = bytes * op->count;
    out->comm_bytes = op->comm_bytes * op->count;
    out->prec = op->prec;
    out->vector = vector;
    if (!isfinite(out->flops) || !isfinite(out->bytes))
        return pc_fail(err, PC_ERR_RANGE, "op %s: sizes overflow", op->name);
    return PC_OK;
}

/* "8192x4096x14336" -> dims; returns count or -1 (empty parts are errors). */
static int parse_shape(const char *s, double *dims, int max) {
    int n = 0;
    const char *p = s;
    for (;;) {
        size_t len = strcspn(p, "x,*X");
        char part[64];
        if (len == 0 || len >= sizeof part || n == max) return -1;
        memcpy(part, p, len);
        part[len] = '\0';
        double v;
        if (pc_analytic_parse_num(part, 1, &v) || !(v > 0) || v != floor(v)) return -1;
        dims[n++] = v;
        p += len;
        if (!*p) return n;
        p++; /* the separator; a trailing one leaves an empty part */
    }
}

static double product(const double *d, int n) {
    double p = 1;
    for (int i = 0; i < n; i++) p *= d[i];
    return p;
}

static const char *kind_fields(pc_op_kind k) {
    switch (k) {
    case PC_OP_MATMUL: return "m (B), k (D), n (F), batch, shape=MxKxN";
    case PC_OP_ELEMENTWISE: return "shape, elems, inputs, flops (per element)";
    case PC_OP_REDUCE: return "shape, axis, reduce, elems";
    case PC_OP_TRANSPOSE: return "shape, elems";
    case PC_OP_GATHER: return "table=ROWSxWIDTH, rows, width, indices";
    case PC_OP_CONV: return "input=NxHxWxC, kernel=KHxKW, out, stride";
    case PC_OP_RAW: return "flops, bytes";
    default: return "";
    }
}

/* Applies one key=value to an op whose kind is set. `where` prefixes errors. */
static pc_status apply_kv(pc_op *op, const char *key, const char *val, op_parse *ps,
                          const char *where, pc_error *err) {
    double v = 0;
    int is_num = pc_analytic_parse_num(val, 1, &v) == 0;
#define NUM(field)                                                                                 \
    do {                                                                                           \
        if (!is_num || !(v >= 0))                                                                  \
            return pc_fail(err, PC_ERR_ARG, "%s: %s=%s: expected a number >= 0", where, key, val); \
        op->field = v;                                                                             \
        return PC_OK;                                                                              \
    } while (0)
    if (!strcmp(key, "name")) {
        if (strlen(val) >= sizeof op->name)
            return pc_fail(err, PC_ERR_ARG, "%s: name '%s' is longer than %zu bytes", where, val,
                           sizeof op->name - 1);
        memcpy(op->name, val, strlen(val) + 1);
        return PC_OK;
    }
    if (!strcmp(key, "dtype") || !strcmp(key, "wdtype")) {
        int p = pc_prec_parse(val);
        if (p < 0)
            return pc_fail(err, PC_ERR_ARG,
                           "%s: %s=%s: unknown dtype (use fp32, tf32, bf16, fp16, fp8, int8, int4, "
                           "fp4)",
                           where, key, val);
        if (key[0] == 'd') {
            op->prec = (pc_prec)p;
            if (!ps->wset) op->wprec = (pc_prec)p; /* weights follow dtype unless wdtype given */
        } else {
            op->wprec = (pc_prec)p;
            ps->wset = 1;
        }
        return PC_OK;
    }
    if (!strcmp(key, "count")) NUM(count);
    if (!strcmp(key, "comm") || !strcmp(key, "comm_bytes") ||
        (op->kind == PC_OP_RAW && !strcmp(key, "bytes"))) {
        pc_error e2;
        double b;
        if (pc_parse_bytes(val, &b, &e2))
            return pc_fail(err, PC_ERR_ARG, "%s: %s=%s: %s", where, key, val, e2.msg);
        if (key[0] == 'c')
            op->comm_bytes = b;
        else
            op->bytes = b;
        return PC_OK;
    }
    if (!strcmp(key, "shape")) {
        int n = parse_shape(val, ps->shape, PC_OP_MAX_SHAPE);
        if (n < 1)
            return pc_fail(err, PC_ERR_ARG, "%s: shape=%s: expected sizes like 8192x4096", where,
                           val);
        ps->shape_n = n;
        return PC_OK;
    }
    switch (op->kind) {
    case PC_OP_MATMUL:
        if (!strcmp(key, "m") || !strcmp(key, "B")) NUM(m);
        if (!strcmp(key, "k") || !strcmp(key, "D")) NUM(k);
        if (!strcmp(key, "n") || !strcmp(key, "F")) NUM(n);
        if (!strcmp(key, "batch")) NUM(batch);
        break;
    case PC_OP_ELEMENTWISE:
        if (!strcmp(key, "elems")) NUM(elems);
        if (!strcmp(key, "inputs")) NUM(inputs);
        if (!strcmp(key, "flops")) NUM(flops_per_elem);
        break;
    case PC_OP_REDUCE:
        if (!strcmp(key, "elems")) NUM(elems);
        if (!strcmp(key, "reduce")) NUM(reduce_size);
        if (!strcmp(key, "axis")) {
            if (!is_num || v < 0 || v != floor(v) || v > 64)
                return pc_fail(err, PC_ERR_ARG, "%s: axis=%s: expected an axis index", where, val);
            ps->axis = (int)v;
            return PC_OK;
        }
        break;
    case PC_OP_TRANSPOSE:
        if (!strcmp(key, "elems")) NUM(elems);
        break;
    case PC_OP_GATHER:
        if (!strcmp(key, "table")) {
            double d[2];
            if (parse_shape(val, d, 2) != 2)
                return pc_fail(err, PC_ERR_ARG, "%s: table=%s: expected ROWSxWIDTH", where, val);
            op->rows = d[0];
            op->width = d[1];
            return PC_OK;
        }
        if (!strcmp(key, "rows")) NUM(rows);
        if (!strcmp(key, "width")) NUM(width);
        if (!strcmp(key, "indices")) NUM(indices);
        break;
    case PC_OP_CONV:
        if (!strcmp(key, "input")) {
            double d[4];
            if (parse_shape(val, d, 4) != 4)
                return pc_fail(err, PC_ERR_ARG, "%s: input=%s: expected NxHxWxC (NHWC)", where,
                               val);
            op->batch = d[0], op->h = d[1], op->w = d[2], op->cin = d[3];
            return PC_OK;
        }
        if (!strcmp(key, "kernel")) {
            double d[2];
            int n = parse_shape(val, d, 2);
            if (n < 1) return pc_fail(err, PC_ERR_ARG, "%s: kernel=%s: expected KHxKW", where, val);
            op->kh = d[0];
            op->kw = n == 2 ? d[1] : d[0];
            return PC_OK;
        }
        if (!strcmp(key, "out") || !strcmp(key, "cout")) NUM(cout);
        if (!strcmp(key, "stride")) NUM(stride);
        if (!strcmp(key, "batch")) NUM(batch);
        if (!strcmp(key, "h")) NUM(h);
        if (!strcmp(key, "w")) NUM(w);
        if (!strcmp(key, "cin")) NUM(cin);
        break;
    case PC_OP_RAW:
        if (!strcmp(key, "flops")) NUM(flops);
        break;
    default: break;
    }
#undef NUM
    return pc_fail(err, PC_ERR_ARG,
                   "%s: unknown field '%s' for %s (fields: %s; all kinds: name, dtype, wdtype, "
                   "count, comm)",
                   where, key, pc_op_kind_name(op->kind), kind_fields(op->kind));
}

/* Turns a parsed shape into the kind's sizes. */
static pc_status apply_shape(pc_op *op, const op_parse *ps, const char *where, pc_error *err) {
    const double *shape = ps->shape;
    int n = ps->shape_n, axis = ps->axis;
    if (n == 0) {
        if (op->kind == PC_OP_REDUCE && axis >= 0)
            return pc_fail(err, PC_ERR_ARG, "%s: axis= needs shape=", where);
        return PC_OK;
    }
    switch (op->kind) {
    case PC_OP_MATMUL:
        if (n != 3 && n != 4)
            return pc_fail(err, PC_ERR_ARG, "%s: matmul shape= needs MxKxN or BATCHxMxKxN", where);
        if (n == 4) op->batch = shape[0];
        op->m = shape[n - 3], op->k = shape[n - 2], op->n = shape[n - 1];
        return PC_OK;
    case PC_OP_ELEMENTWISE:
    case PC_OP_TRANSPOSE: op->elems = product(shape, n); return PC_OK;
    case PC_OP_REDUCE:
        op->elems = product(shape, n);
        if (axis >= n)
            return pc_fail(err, PC_ERR_ARG, "%s: axis=%d but the shape has %d axes", where, axis,
                           n);
        if (op->reduce_size <= 0) op->reduce_size = shape[axis >= 0 ? axis : n - 1];
        return PC_OK;
    default:
        return pc_fail(err, PC_ERR_ARG, "%s: shape= is not a field of %s (fields: %s)", where,
                       pc_op_kind_name(op->kind), kind_fields(op->kind));
    }
}

pc_status pc_op_parse_line(const char *line, pc_op *out, pc_error *err) {
    char buf[1024];
    size_t len = strlen(line);
    if (len >= sizeof buf)
        return pc_fail(err, PC_ERR_ARG, "op line longer than %zu bytes", sizeof buf - 1);
    memcpy(buf, line, len + 1);
    char *hash = strchr(buf, '#');
    if (hash) *hash = '\0';
    char *save = NULL;
    char *tok = strtok_r(buf, " \t\r\n", &save);
    if (!tok) return pc_fail(err, PC_ERR_ARG, "empty op line");
    if (!strncmp(tok, "kind=", 5)) tok += 5;
    int kind = op_kind_parse(tok);
    if (kind < 0)
        return pc_fail(err, PC_ERR_ARG,
                       "unknown op kind '%s' (use matmul, elementwise, reduce, transpose, gather, "
                       "conv or raw)",
                       tok);
    pc_op op = pc_op_init((pc_op_kind)kind);
    op_parse ps = {.shape_n = 0, .axis = -1, .wset = 0};
    const char *where = pc_op_kind_name(op.kind);
    while ((tok = strtok_r(NULL, " \t\r\n", &save))) {
        char *eq = strchr(tok, '=');
        if (!eq || eq == tok || !eq[1])
            return pc_fail(err, PC_ERR_ARG, "%s: '%s' is not key=value", where, tok);
        *eq = '\0';
        pc_status st = apply_kv(&op, tok, eq + 1, &ps, where, err);
        if (st) return st;
    }
    pc_status st = apply_shape(&op, &ps, where, err);
    if (st) return st;
    pc_cost c;
    if ((st = pc_op_cost(&op, &c, err))) return st;
    *out = op;
    return PC_OK;
}

static pc_status op_from_json(const cJSON *o, pc_op *out, const char *where, pc_error *err) {
    if (!cJSON_IsObject(o)) return pc_fail(err, PC_ERR_FORMAT, "%s: expected an object", where);
    const cJSON *jk = cJSON_GetObjectItemCaseSensitive(o, "kind");
    if (!cJSON_IsString(jk))
        return pc_fail(err, PC_ERR_ARG,
                       "%s: needs \"kind\" (matmul, elementwise, reduce, "
                       "transpose, gather, conv, raw)",
                       where);
    int kind = op_kind_parse(jk->valuestring);
    if (kind < 0)
        return pc_fail(err, PC_ERR_ARG, "%s: unknown kind \"%s\"", where, jk->valuestring);
    pc_op op = pc_op_init((pc_op_kind)kind);
    op_parse ps = {.shape_n = 0, .axis = -1, .wset = 0};
    for (const cJSON *it = o->child; it; it = it->next) {
        if (!it->string) continue;
        if (!strcmp(it->string, "kind")) continue;
        char val[512];
        if (cJSON_IsString(it)) {
            if (strlen(it->valuestring) >= sizeof val)
                return pc_fail(err, PC_ERR_ARG, "%s: \"%s\" is too long", where, it->string);
            snprintf(val, sizeof val, "%s", it->valuestring);
        } else if (cJSON_IsNumber(it)) {
            snprintf(val, sizeof val, "%.17g", it->valuedouble);
        } else if (cJSON_IsArray(it)) {
            size_t used = 0;
            val[0] = '\0';
            int i = 0;
            for (const cJSON *e = it->child; e; e = e->next, i++) {
                if (!cJSON_IsNumber(e) || used + 32 >= sizeof val)
                    return pc_fail(err, PC_ERR_ARG, "%s: \"%s\" must be an array of sizes", where,
                                   it->string);
                used += (size_t)snprintf(val + used, sizeof val - used, "%s%.17g", i ? "x" : "",
                                         e->valuedouble);
            }
            if (i == 0)
                return pc_fail(err, PC_ERR_ARG, "%s: \"%s\" is an empty array", where, it->string);
        } else {
            return pc_fail(err, PC_ERR_ARG, "%s: \"%s\" must be a number, string or array", where,
                           it->string);
        }
        pc_status st = apply_kv(&op, it->string, val, &ps, where, err);
        if (st) return st;
    }
    pc_status st = apply_shape(&op, &ps, where, err);
    if (st) return st;
    pc_cost c;
    if ((st = pc_op_cost(&op, &c, err))) return st;
    *out = op;
    return PC_OK;
}

#define PC_OPS_MAX 1000000

static pc_status push(pc_op **ops, size_t *n, size_t *cap, const pc_op *op, pc_error *err) {
    if (*n == *cap) {
        if (*cap >= PC_OPS_MAX) return pc_fail(err, PC_ERR_RANGE, "more than %d ops", PC_OPS_MAX);
        size_t nc = *cap ? *cap * 2 : 16;
        pc_op *g = realloc(*ops, nc * sizeof *g);
        if (!g) return pc_fail(err, PC_ERR_NOMEM, "out of memory");
        *ops = g;
        *cap = nc;
    }
    (*ops)[(*n)++] = *op;
    return PC_OK;
}

pc_status pc_ops_parse(const char *text, size_t len, const char *origin, pc_op **ops, size_t *n,
                       pc_error *err) {
    *ops = NULL;
    *n = 0;
    if (!origin) origin = "ops";
    if (!text && len) return pc_fail(err, PC_ERR_ARG, "pc_ops_parse: NULL text");
    if (len && memchr(text, '\0', len))
        return pc_fail(err, PC_ERR_FORMAT, "%s: contains a NUL byte: not a text file", origin);
    size_t i = 0;
    while (i < len && isspace((unsigned char)text[i])) i++;
    pc_op *list = NULL;
    size_t cnt = 0, cap = 0;
    pc_status st = PC_OK;
    if (i < len && (text[i] == '[' || text[i] == '{')) {
        cJSON *root = cJSON_ParseWithLength(text, len);
        if (!root) return pc_fail(err, PC_ERR_FORMAT, "%s: not valid JSON", origin);
        const cJSON *arr = root;
        if (cJSON_IsObject(root)) arr = cJSON_GetObjectItemCaseSensitive(root, "ops");
        if (!cJSON_IsArray(arr)) {
            cJSON_Delete(root);
            return pc_fail(err, PC_ERR_FORMAT, "%s: expected an array of ops or {\"ops\": [...]}",
                           origin);
        }
        int k = 0;
        for (const cJSON *it = arr->child; it && !st; it = it->next, k++) {
            char where[300];
            snprintf(where, sizeof where, "%s: ops[%d]", origin, k);
            pc_op op;
            st = op_from_json(it, &op, where, err);
            if (!st) st = push(&list, &cnt, &cap, &op, err);
        }
        cJSON_Delete(root);
    } else {
        size_t pos = 0;
        int lineno = 0;
        while (pos < len && !st) {
            size_t end = pos;
            while (end < len && text[end] != '\n') end++;
            lineno++;
            char line[1024];
            size_t l = end - pos;
            if (l >= sizeof line) {
                st = pc_fail(err, PC_ERR_FORMAT, "%s:%d: line longer than %zu bytes", origin,
                             lineno, sizeof line - 1);
                break;
            }
            memcpy(line, text + pos, l);
            line[l] = '\0';
            pos = end + 1;
            char *c = line;
            while (isspace((unsigned char)*c)) c++;
            if (!*c || *c == '#') continue;
            pc_op op;
            st = pc_op_parse_line(c, &op, err);
            if (st) {
                pc_error_prefix(err, "%s:%d", origin, lineno);
                break;
            }
            st = push(&list, &cnt, &cap, &op, err);
        }
    }
    if (!st && cnt == 0) st = pc_fail(err, PC_ERR_INVALID, "%s: no ops", origin);
    if (st) {
        free(list);
        return st;
    }
    for (size_t k = 0; k < cnt; k++)
        if (!list[k].name[0]) snprintf(list[k].name, sizeof list[k].name, "op%zu", k);
    *ops = list;
    *n = cnt;
    return PC_OK;
}

pc_status pc_ops_load(const char *path, pc_op **ops, size_t *n, pc_error *err) {
    char *text;
    size_t len;
    pc_status st = pc_read_file(path, 64u << 20, &text, &len, err);
    if (st) return st;
    st = pc_ops_parse(text, len, path, ops, n, err);
    free(text);
    return st;
}

void pc_ops_free(pc_op *ops) { free(ops); }
