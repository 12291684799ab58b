/*
 * Raw TpuGraphs tuning protos -> HLO IR + runs (proto.h).
 *
 * First one linear walk over the wire format, guided by the descriptors
 * protoc-c generated from tuning.proto, checks every key, varint and length
 * against the bytes that are really there, every known field's wire type,
 * and adds up the memory the messages take. So a truncated or bit-flipped
 * file is refused with the path of the broken field and its byte offset
 * ("modules[3].runs[12] at byte 5123: ..."), and a small file cannot claim
 * gigabytes. Then the outer messages (TuningData, ModuleTuningData,
 * HloModuleProto) are read by hand and each computation and each run is
 * unpacked by protobuf-c on its own, into an arena reused from one to the
 * next, and copied into the IR.
 */
#define _DEFAULT_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "hlo/proto.h"
#include "hlo/verify.h"
#include "io/io_internal.h"
#include "tpugraphs/opcode.h"
#include "tuning.pb-c.h"

/*
 * The in-memory size of a file's messages (protobuf-c's structs, about the
 * IR's size) may not exceed this: a small corrupt file cannot claim gigabytes.
 */
#define PC_HLO_PROTO_MAX_MEMORY (UINT64_C(8) << 30)

const char *pc_hlo_file_kind_name(pc_hlo_file_kind k) {
    switch (k) {
    case PC_HLO_FILE_TUNING_DATA: return "TuningData";
    case PC_HLO_FILE_MODULE_TUNING_DATA: return "ModuleTuningData";
    case PC_HLO_FILE_MODULE: return "HloModuleProto";
    }
    return "?";
}

/* ---- wire-format walk ---------------------------------------------------- */

typedef struct walk {
    const uint8_t *file; /* start of the buffer, for byte offsets */
    uint64_t mem;        /* bytes protobuf-c would allocate for the whole message */
    char path[512];      /* where we are: "modules[3].runs[12]" */
    char msg[1024];      /* the first problem */
} walk;

/* Reads a varint at p[*i] (< len); 0 if it runs past len or over 10 bytes. */
static int rd_varint(const uint8_t *p, size_t len, size_t *i, uint64_t *v) {
    uint64_t r = 0;
    for (int s = 0; s < 70; s += 7) {
        if (*i >= len) return 0;
        uint8_t c = p[(*i)++];
        if (s == 63 && (c & 0x7e)) return 0; /* more than 64 bits */
        r |= (uint64_t)(c & 0x7f) << s;
        if (!(c & 0x80)) {
            *v = r;
            return 1;
        }
    }
    return 0;
}

static int walk_fail(walk *w, const uint8_t *at, const char *fmt, ...) PC_PRINTF(3, 4);
static int walk_fail(walk *w, const uint8_t *at, const char *fmt, ...) {
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(w->msg, sizeof w->msg, "%s%sbyte %zu: %s", w->path, w->path[0] ? " at " : "at ",
             (size_t)(at - w->file), what);
    return 0;
}

static const char *wire_name(unsigned wt) {
    static const char *const names[8] = {"varint", "fixed64", "length-delimited", "group start",
                                         "group end", "fixed32", "invalid (6)", "invalid (7)"};
    return names[wt & 7];
}

/* Wire type a scalar field is written with (not packed). */
static unsigned scalar_wire(ProtobufCType t) {
    switch (t) {
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE: return 1;
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_FLOAT: return 5;
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_BYTES:
    case PROTOBUF_C_TYPE_MESSAGE: return 2;
    default: return 0;
    }
}

static int walk_msg(walk *w, const ProtobufCMessageDescriptor *d, const uint8_t *p, size_t len);

/* A packed run of scalars: every element complete. Returns the count, or -1. */
static int64_t packed_count(unsigned wire, const uint8_t *p, size_t len) {
    if (wire == 1) return len % 8 ? -1 : (int64_t)(len / 8);
    if (wire == 5) return len % 4 ? -1 : (int64_t)(len / 4);
    int64_t n = 0;
    for (size_t i = 0; i < len; n++) {
        uint64_t v;
        if (!rd_varint(p, len, &i, &v)) return -1;
    }
    return n;
}

static int walk_field(walk *w, const ProtobufCMessageDescriptor *d,
                      const ProtobufCFieldDescriptor *f, unsigned wt, const uint8_t *key_at,
                      const uint8_t *v, size_t vlen, int64_t *occurrences) {
    unsigned want = scalar_wire(f->type);
    int repeated = f->label == PROTOBUF_C_LABEL_REPEATED;
    if (wt != want && !(repeated && want != 2 && wt == 2))
        return walk_fail(w, key_at, "field %u (%s.%s) is %s, expected %s", f->id, d->short_name,
                         f->name, wire_name(wt), wire_name(want));
    if (repeated) w->mem += 8; /* the pointer or value in the array */
    if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
        const ProtobufCMessageDescriptor *sub = f->descriptor;
        w->mem += sub->sizeof_message;
        size_t keep = strlen(w->path);
        int64_t k = repeated ? (*occurrences)++ : -1;
        if (k >= 0)
            snprintf(w->path + keep, sizeof w->path - keep, "%s%s[%lld]", keep ? "." : "",
                     f->name, (long long)k);
        else
            snprintf(w->path + keep, sizeof w->path - keep, "%s%s", keep ? "." : "", f->name);
        int ok = walk_msg(w, sub, v, vlen);
        if (ok) w->path[keep] = '\0';
        return ok;
    }
    if (f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_BYTES) {
        w->mem += vlen + 16;
        return 1;
    }
    if (wt == 2) { /* packed scalars */
        int64_t n = packed_count(want, v, vlen);
        if (n < 0)
            return walk_fail(w, key_at, "field %u (%s.%s): packed list of %zu bytes ends inside "
                             "an element", f->id, d->short_name, f->name, vlen);
        w->mem += 8 * (uint64_t)n;
    }
    return 1;
}

/*
 * Walks one message's bytes p[0, len): every key, varint and length is
 * checked, known fields must have their type's wire type, message fields are
 * walked in turn (the schema has no recursion, so the depth is bounded).
 */
static int walk_msg(walk *w, const ProtobufCMessageDescriptor *d, const uint8_t *p, size_t len) {
    int64_t occ[64] = {0};
    size_t i = 0;
    while (i < len) {
        const uint8_t *key_at = p + i;
        uint64_t key;
        if (!rd_varint(p, len, &i, &key))
            return walk_fail(w, key_at, "field key runs past the end (%zu bytes left)",
                             len - (size_t)(key_at - p));
        uint64_t num = key >> 3;
        unsigned wt = (unsigned)(key & 7);
        if (num == 0 || num > 536870911u)
            return walk_fail(w, key_at, "field number %llu is not valid", (unsigned long long)num);
        const uint8_t *v = p + i;
        size_t vlen = 0;
        uint64_t x;
        switch (wt) {
        case 0:
            if (!rd_varint(p, len, &i, &x))
                return walk_fail(w, key_at, "field %llu: varint runs past the end",
                                 (unsigned long long)num);
            vlen = (size_t)(p + i - v);
            break;
        case 1:
        case 5:
            vlen = wt == 1 ? 8 : 4;
            if (len - i < vlen)
                return walk_fail(w, key_at, "field %llu: %zu-byte value, only %zu bytes left",
                                 (unsigned long long)num, vlen, len - i);
            i += vlen;
            break;
        case 2:
            if (!rd_varint(p, len, &i, &x))
                return walk_fail(w, key_at, "field %llu: length runs past the end",
                                 (unsigned long long)num);
            if (x > len - i)
                return walk_fail(w, key_at, "field %llu claims %llu bytes, only %zu left "
                                 "(truncated file?)", (unsigned long long)num,
                                 (unsigned long long)x, len - i);
            v = p + i;
            vlen = (size_t)x;
            i += vlen;
            break;
        default:
            return walk_fail(w, key_at, "field %llu has wire type %s, which is not supported",
                             (unsigned long long)num, wire_name(wt));
        }
        const ProtobufCFieldDescriptor *f =
            protobuf_c_message_descriptor_get_field(d, (unsigned)num);
        if (!f) { /* unknown: protobuf-c keeps a copy */
            w->mem += sizeof(ProtobufCMessageUnknownField) + vlen;
            continue;
        }
        size_t fi = (size_t)(f - d->fields);
        if (!walk_field(w, d, f, wt, key_at, v, vlen, &occ[fi < 64 ? fi : 63])) return 0;
    }
    return 1;
}

/* ---- copying into the IR --------------------------------------------------- */

typedef struct conv_ctx {
    const char *what; /* file path */
    char where[256];  /* "module 3 ('fusion.1')" */
    pc_error *err;
} conv_ctx;

static pc_status conv_fail(conv_ctx *c, pc_status code, const char *fmt, ...) PC_PRINTF(3, 4);
static pc_status conv_fail(conv_ctx *c, pc_status code, const char *fmt, ...) {
    char what[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return pc_fail(c->err, code, "%s: %s%s%s", c->what, c->where, c->where[0] ? ": " : "", what);
}

static pc_status nomem(conv_ctx *c) { return conv_fail(c, PC_ERR_NOMEM, "out of memory"); }

static int copy_i64s(pc_i64s *d, const int64_t *v, size_t n) {
    d->v = NULL;
    d->n = 0;
    if (n == 0) return 1;
    if (n > INT32_MAX) return 0;
    d->v = pc_malloc_array(n, sizeof *v);
    if (!d->v) return 0;
    memcpy(d->v, v, n * sizeof *v);
    d->n = (int32_t)n;
    return 1;
}

static char *copy_str(const char *s) {
    if (!s) s = "";
    size_t n = strlen(s);
    char *r = malloc(n + 1);
    if (r) memcpy(r, s, n + 1);
    return r;
}

static int conv_window(pc_hlo_window *w, const Pcpb__Window *pw) {
    memset(w, 0, sizeof *w);
    if (!pw || pw->n_dimensions == 0) return 1;
    size_t n = pw->n_dimensions;
    if (n > INT32_MAX) return 0;
    w->n = (int32_t)n;
    w->size = pc_malloc_array(n, sizeof(int64_t));
    w->stride = pc_malloc_array(n, sizeof(int64_t));
    w->padding_low = pc_malloc_array(n, sizeof(int64_t));
    w->padding_high = pc_malloc_array(n, sizeof(int64_t));
    w->window_dilation = pc_malloc_array(n, sizeof(int64_t));
    w->base_dilation = pc_malloc_array(n, sizeof(int64_t));
    w->window_reversal = pc_malloc_array(n, 1);
    if (!w->size || !w->stride || !w->padding_low || !w->padding_high || !w->window_dilation ||
        !w->base_dilation || !w->window_reversal)
        return 0;
    for (size_t i = 0; i < n; i++) {
        const Pcpb__WindowDimension *d = pw->dimensions[i];
        w->size[i] = d->size;
        w->stride[i] = d->stride;
        w->padding_low[i] = d->padding_low;
        w->padding_high[i] = d->padding_high;
        w->window_dilation[i] = d->window_dilation;
        w->base_dilation[i] = d->base_dilation;
        w->window_reversal[i] = d->window_reversal ? 1 : 0;
    }
    return 1;
}

/* Copies one field of each repeated sub-message into an int64 list. */
#define COPY_EACH(dst, arr, cnt, field)                                    \
    do {                                                                   \
        (dst).v = NULL;                                                    \
        (dst).n = 0;                                                       \
        if ((cnt) > 0) {                                                   \
            if ((cnt) > INT32_MAX) return 0;                               \
            (dst).v = pc_malloc_array((cnt), sizeof(int64_t));             \
            if (!(dst).v) return 0;                                        \
            for (size_t q_ = 0; q_ < (cnt); q_++) (dst).v[q_] = (arr)[q_]->field; \
            (dst).n = (int32_t)(cnt);                                      \
        }                                                                  \
    } while (0)

/* The fields few instructions have (pc_hlo_inst_ext), made only when the proto has one. */
static int conv_ext(pc_hlo_instruction *in, const Pcpb__HloInstructionProto *p) {
    if (!(p->window && p->window->n_dimensions) && !p->convolution_dimension_numbers &&
        !p->n_slice_dimensions && !p->n_dynamic_slice_sizes && !p->padding_config &&
        !p->dot_dimension_numbers)
        return 1;
    pc_hlo_inst_ext *x = pc_hlo_x_mut(in);
    if (!x) return 0;
    if (!conv_window(&x->window, p->window)) return 0;
    const Pcpb__ConvolutionDimensionNumbers *cd = p->convolution_dimension_numbers;
    if (cd) {
        pc_hlo_conv_dims *c = &x->conv;
        c->present = 1;
        c->input_batch = cd->input_batch_dimension;
        c->input_feature = cd->input_feature_dimension;
        c->kernel_input_feature = cd->kernel_input_feature_dimension;
        c->kernel_output_feature = cd->kernel_output_feature_dimension;
        c->output_batch = cd->output_batch_dimension;
        c->output_feature = cd->output_feature_dimension;
        if (!copy_i64s(&c->input_spatial, cd->input_spatial_dimensions,
                       cd->n_input_spatial_dimensions) ||
            !copy_i64s(&c->kernel_spatial, cd->kernel_spatial_dimensions,
                       cd->n_kernel_spatial_dimensions) ||
            !copy_i64s(&c->output_spatial, cd->output_spatial_dimensions,
                       cd->n_output_spatial_dimensions))
            return 0;
    }
    COPY_EACH(x->slice_start, p->slice_dimensions, p->n_slice_dimensions, start);
    COPY_EACH(x->slice_limit, p->slice_dimensions, p->n_slice_dimensions, limit);
    COPY_EACH(x->slice_stride, p->slice_dimensions, p->n_slice_dimensions, stride);
    if (!copy_i64s(&x->dynamic_slice_sizes, p->dynamic_slice_sizes, p->n_dynamic_slice_sizes))
        return 0;
    if (p->padding_config) {
        const Pcpb__PaddingConfig *pc = p->padding_config;
        COPY_EACH(x->pad_low, pc->dimensions, pc->n_dimensions, edge_padding_low);
        COPY_EACH(x->pad_high, pc->dimensions, pc->n_dimensions, edge_padding_high);
        COPY_EACH(x->pad_interior, pc->dimensions, pc->n_dimensions, interior_padding);
    }
    const Pcpb__DotDimensionNumbers *dd = p->dot_dimension_numbers;
    if (dd) {
        x->dot.present = 1;
        if (!copy_i64s(&x->dot.lhs_contracting, dd->lhs_contracting_dimensions,
                       dd->n_lhs_contracting_dimensions) ||
            !copy_i64s(&x->dot.rhs_contracting, dd->rhs_contracting_dimensions,
                       dd->n_rhs_contracting_dimensions) ||
            !copy_i64s(&x->dot.lhs_batch, dd->lhs_batch_dimensions, dd->n_lhs_batch_dimensions) ||
            !copy_i64s(&x->dot.rhs_batch, dd->rhs_batch_dimensions, dd->n_rhs_batch_dimensions))
            return 0;
    }
    return 1;
}

static int conv_inst(pc_hlo_instruction *in, const Pcpb__HloInstructionProto *p) {
    in->name = copy_str(p->name);
    in->opcode = copy_str(p->opcode);
    if (!in->name || !in->opcode) return 0;
    in->opcode_id = pc_hlo_opcode_find(in->opcode);
    in->id = p->id;
    in->parameter_number = strcmp(in->opcode, "parameter") == 0 ? p->parameter_number : -1;
    if (p->shape) {
        in->shape.element_type = p->shape->element_type;
        if (!copy_i64s(&in->shape.dims, p->shape->dimensions, p->shape->n_dimensions)) return 0;
        if (p->shape->n_tuple_shapes > INT32_MAX) return 0;
        in->shape.tuple_count = (int32_t)p->shape->n_tuple_shapes;
        if (p->shape->layout &&
            !copy_i64s(&in->shape.minor_to_major, p->shape->layout->minor_to_major,
                       p->shape->layout->n_minor_to_major))
            return 0;
    }
    if (!copy_i64s(&in->dimensions, p->dimensions, p->n_dimensions)) return 0;
    if (!conv_ext(in, p)) return 0;
    in->feature_group_count = p->feature_group_count;
    in->batch_group_count = p->batch_group_count;
    in->is_stable = p->is_stable ? 1 : 0;
    if (!copy_i64s(&in->operand_ids, p->operand_ids, p->n_operand_ids)) return 0;
    if (!copy_i64s(&in->called_computation_ids, p->called_computation_ids,
                   p->n_called_computation_ids))
        return 0;
    return 1;
}

/* One computation: its instructions copied into the IR. */
static int conv_comp(pc_hlo_computation *comp, const Pcpb__HloComputationProto *p) {
    comp->name = copy_str(p->name);
    comp->id = p->id;
    comp->root_id = p->root_id;
    if (!comp->name) return 0;
    if (p->n_instructions == 0) return 1;
    comp->inst = pc_calloc_array(p->n_instructions, sizeof *comp->inst);
    if (!comp->inst) return 0;
    for (size_t i = 0; i < p->n_instructions; i++) {
        comp->n_inst = (int32_t)i + 1;
        if (!conv_inst(&comp->inst[i], p->instructions[i])) return 0;
    }
    return 1;
}

static void free_run(pc_hlo_run *r) {
    free(r->kernel_bounds.v);
    free(r->output_bounds.v);
    free(r->input_bounds.v);
    free(r->layout);
}

static pc_status conv_run(conv_ctx *cx, int64_t ri, const Pcpb__ConfigProfile *p, pc_hlo_run *r) {
    memset(r, 0, sizeof *r);
    r->error = p->error ? 1 : 0;
    r->is_default = p->is_default ? 1 : 0;
    r->has_profile = p->profile != NULL;
    r->ns = p->profile ? p->profile->compute_time_ns : 0;
    if (p->config_case == PCPB__CONFIG_PROFILE__CONFIG_OP_CONFIG && p->op_config) {
        r->config = PC_HLO_RUN_TILE;
        const Pcpb__TileSizeConfig *t = p->op_config->tile_size_config;
        if (t) {
            r->has_tile = 1;
            if (!copy_i64s(&r->kernel_bounds, t->kernel_bounds, t->n_kernel_bounds) ||
                !copy_i64s(&r->output_bounds, t->output_bounds, t->n_output_bounds) ||
                !copy_i64s(&r->input_bounds, t->input_bounds, t->n_input_bounds))
                return nomem(cx);
        }
    } else if (p->config_case == PCPB__CONFIG_PROFILE__CONFIG_MODULE_CONFIG && p->module_config) {
        r->config = PC_HLO_RUN_LAYOUT;
        const Pcpb__LayoutConfig *l = p->module_config->layout_config;
        if (l) {
            r->has_layout = 1;
            if (l->n_nodes > INT32_MAX / PC_TPUG_LAYOUT_FEATS)
                return conv_fail(cx, PC_ERR_RANGE, "run %lld: %zu layout nodes", (long long)ri,
                                 l->n_nodes);
            r->layout_nodes = (int32_t)l->n_nodes;
            r->layout = pc_malloc_array(l->n_nodes ? l->n_nodes * PC_TPUG_LAYOUT_FEATS : 1,
                                        sizeof *r->layout);
            if (!r->layout) return nomem(cx);
            for (size_t i = 0; i < l->n_nodes * PC_TPUG_LAYOUT_FEATS; i++) r->layout[i] = -1;
            for (size_t j = 0; j < l->n_nodes; j++) {
                const Pcpb__NodeLayoutConfig *nd = l->nodes[j];
                if (nd->n_tensors > 3)
                    return conv_fail(cx, PC_ERR_FORMAT,
                                     "run %lld: layout node %zu has %zu tensors (at most 3: "
                                     "output, input, kernel)", (long long)ri, j, nd->n_tensors);
                for (size_t t = 0; t < nd->n_tensors; t++) {
                    const Pcpb__TensorLayoutConfig *tc = nd->tensors[t];
                    for (size_t d = 0; d < tc->n_dims && d < PC_TPUG_MAX_RANK; d++)
                        r->layout[j * PC_TPUG_LAYOUT_FEATS + t * PC_TPUG_MAX_RANK + d] =
                            tc->dims[d];
                }
            }
        }
    }
    return PC_OK;
}

static void free_tuned(pc_hlo_tuned *t) {
    pc_hlo_module_free(t->module);
    for (int32_t i = 0; i < t->n_runs && t->runs; i++) free_run(&t->runs[i]);
    free(t->runs);
    free(t->config_index_to_node);
}

void pc_hlo_tuning_free(pc_hlo_tuning *t) {
    if (!t) return;
    for (int32_t i = 0; i < t->n_mods && t->mods; i++) free_tuned(&t->mods[i]);
    free(t->mods);
    free(t);
}

/* ---- protobuf-c's allocations: one arena, reused --------------------------- */

/*
 * protobuf-c allocates every message, string and array separately. Each
 * computation and each run is unpacked on its own into a bump arena over
 * large chunks, copied into the IR, and the arena is reset for the next: so
 * a module of 100k instructions costs neither a million malloc/free pairs
 * nor a second, protobuf-c-shaped copy of itself in memory.
 */
typedef struct arena_chunk {
    struct arena_chunk *next;
    size_t used, cap;
    max_align_t data[];
} arena_chunk;

typedef struct arena {
    arena_chunk *head;
    int failed;
} arena;

#define ARENA_CHUNK ((size_t)1 << 20)

static void *arena_alloc(void *ad, size_t size) {
    arena *a = ad;
    size = (size + 15) & ~(size_t)15;
    /* first fit over the chunks (few: 1 MiB each, or one per larger block) */
    for (arena_chunk *c = a->head; c; c = c->next) {
        if (c->cap - c->used >= size) {
            void *p = (char *)c->data + c->used;
            c->used += size;
            return p;
        }
    }
    size_t cap = size > ARENA_CHUNK ? size : ARENA_CHUNK;
    arena_chunk *c = malloc(sizeof *c + cap);
    if (!c) {
        a->failed = 1;
        return NULL;
    }
    c->cap = cap;
    c->used = size;
    c->next = a->head;
    a->head = c;
    return c->data;
}

static void arena_free_one(void *ad, void *p) {
    (void)ad;
    (void)p;
}

static void arena_reset(arena *a) {
    for (arena_chunk *c = a->head; c; c = c->next) c->used = 0;
    a->failed = 0;
}

static void arena_release(arena *a) {
    for (arena_chunk *c = a->head, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    a->head = NULL;
}

/* ---- decoding, one computation / run at a time ------------------------------- */

/* One field of a message the walk has checked. */
typedef struct field {
    uint64_t num;
    unsigned wt;
    uint64_t v;       /* varint value; length for wire type 2 */
    const uint8_t *p; /* value bytes (wire types 1, 2, 5) */
    size_t len;
} field;

static int next_field(const uint8_t *b, size_t len, size_t *i, field *f) {
    uint64_t key;
    if (!rd_varint(b, len, i, &key)) return 0;
    f->num = key >> 3;
    f->wt = (unsigned)(key & 7);
    f->v = 0;
    f->p = NULL;
    f->len = 0;
    switch (f->wt) {
    case 0: return rd_varint(b, len, i, &f->v);
    case 1:
    case 5:
        f->len = f->wt == 1 ? 8 : 4;
        if (len - *i < f->len) return 0;
        f->p = b + *i;
        *i += f->len;
        return 1;
    case 2:
        if (!rd_varint(b, len, i, &f->v) || f->v > len - *i) return 0;
        f->p = b + *i;
        f->len = (size_t)f->v;
        *i += f->len;
        return 1;
    default: return 0;
    }
}

static pc_status walk_bug(conv_ctx *cx) {
    return conv_fail(cx, PC_ERR_FORMAT, "malformed field (missed by the wire check)");
}

/* Unpacks one sub-message into the (reset) arena. */
static ProtobufCMessage *unpack_part(conv_ctx *cx, arena *ar, const ProtobufCMessageDescriptor *d,
                                     const field *f, const char *what, size_t k, pc_status *st) {
    arena_reset(ar);
    ProtobufCAllocator al = {arena_alloc, arena_free_one, ar};
    ProtobufCMessage *m = protobuf_c_message_unpack(d, &al, f->len, f->p);
    if (!m)
        *st = ar->failed ? nomem(cx)
                         : conv_fail(cx, PC_ERR_FORMAT, "%s %zu is not a valid %s (protobuf-c "
                                     "rejected it)", what, k, d->short_name);
    return m;
}

static char *copy_bytes_str(const uint8_t *p, size_t n) {
    char *r = malloc(n + 1);
    if (!r) return NULL;
    if (n) memcpy(r, p, n);
    r[n] = '\0';
    return r;
}

/* ---- the verifier's rules (verify.c) on a decoded module ------------------- */

/* Where an instruction id is: operands of a proto are module-wide ids. */
typedef struct id_ref {
    int64_t id;
    int32_t comp, inst;
} id_ref;

typedef struct id_index {
    const pc_hlo_module *m;
    id_ref *v;
    size_t n;
} id_index;

static int cmp_ref(const void *a, const void *b) {
    int64_t x = ((const id_ref *)a)->id, y = ((const id_ref *)b)->id;
    return (x > y) - (x < y);
}

static const id_ref *find_ref(const id_index *ix, int64_t id) {
    const id_ref key = {id, 0, 0};
    return ix->n ? bsearch(&key, ix->v, ix->n, sizeof *ix->v, cmp_ref) : NULL;
}

/* An operand of computation c: an instruction of c (one of another computation is none). */
static const pc_hlo_instruction *id_operand(void *user, const pc_hlo_computation *c,
                                            int64_t id) {
    const id_index *ix = user;
    const id_ref *r = find_ref(ix, id);
    return r && &ix->m->comp[r->comp] == c ? &ix->m->comp[r->comp].inst[r->inst] : NULL;
}

/* An operand naming an instruction of another computation (XLA's operands are its own). */
static pc_status foreign_operands(conv_ctx *cx, const id_index *ix, int32_t c) {
    const pc_hlo_computation *comp = &ix->m->comp[c];
    for (int32_t i = 0; i < comp->n_inst; i++) {
        const pc_hlo_instruction *in = &comp->inst[i];
        for (int32_t k = 0; k < in->operand_ids.n; k++) {
            const id_ref *r = find_ref(ix, in->operand_ids.v[k]);
            if (!r || r->comp == c) continue;
            char nb1[PC_HLO_NAME_BUF], nb2[PC_HLO_NAME_BUF], nb3[PC_HLO_NAME_BUF],
                nb4[PC_HLO_NAME_BUF];
            const pc_hlo_computation *other = &ix->m->comp[r->comp];
            return conv_fail(cx, PC_ERR_FORMAT,
                             "computation '%s': instruction '%s' (id %lld): operand %d names id "
                             "%lld, instruction '%s' of computation '%s' (expected an "
                             "instruction of the same computation)",
                             pc_hlo_printable(comp->name, nb1), pc_hlo_printable(in->name, nb2),
                             (long long)in->id, (int)k, (long long)in->operand_ids.v[k],
                             pc_hlo_printable(other->inst[r->inst].name, nb3),
                             pc_hlo_printable(other->name, nb4));
        }
    }
    return PC_OK;
}

/* Every computation of m under the rules the text reader applies; the first
 * broken one is an error naming the computation and the instruction. */
static pc_status verify_module(conv_ctx *cx, const pc_hlo_module *m) {
    size_t n = 0;
    for (int32_t c = 0; c < m->n_comp; c++) n += (size_t)m->comp[c].n_inst;
    id_index ix = {m, pc_malloc_array(n ? n : 1, sizeof(id_ref)), 0};
    if (!ix.v) return nomem(cx);
    for (int32_t c = 0; c < m->n_comp; c++)
        for (int32_t i = 0; i < m->comp[c].n_inst; i++)
            ix.v[ix.n++] = (id_ref){m->comp[c].inst[i].id, c, i};
    qsort(ix.v, ix.n, sizeof *ix.v, cmp_ref);
    pc_status st = PC_OK;
    for (int32_t c = 0; c < m->n_comp && !st; c++) {
        const pc_hlo_computation *comp = &m->comp[c];
        if ((st = foreign_operands(cx, &ix, c))) break;
        pc_hlo_fault f;
        int rc = pc_hlo_verify_computation(comp, id_operand, &ix, &f);
        char nb1[PC_HLO_NAME_BUF], nb2[PC_HLO_NAME_BUF];
        if (rc < 0) st = nomem(cx);
        else if (rc > 0)
            st = conv_fail(cx, PC_ERR_FORMAT, "computation '%s': instruction '%s' (id %lld): %s",
                           pc_hlo_printable(comp->name, nb1),
                           pc_hlo_printable(comp->inst[f.inst].name, nb2),
                           (long long)comp->inst[f.inst].id, f.why);
    }
    free(ix.v);
    return st;
}

/* An HloModuleProto's bytes -> IR, one computation at a time. */
static pc_status decode_module(conv_ctx *cx, arena *ar, const uint8_t *b, size_t len,
                               pc_hlo_module **out) {
    *out = NULL;
    size_t i = 0, ncomp = 0;
    field f;
    while (i < len) {
        if (!next_field(b, len, &i, &f)) return walk_bug(cx);
        ncomp += f.num == 3 && f.wt == 2;
    }
    if (ncomp > INT32_MAX) return conv_fail(cx, PC_ERR_RANGE, "%zu computations", ncomp);
    pc_hlo_module *m = calloc(1, sizeof *m);
    if (!m) return nomem(cx);
    m->comp = pc_calloc_array(ncomp ? ncomp : 1, sizeof *m->comp);
    if (!m->comp) goto oom;
    pc_status st = PC_OK;
    int64_t total = 0;
    for (i = 0; i < len && !st;) {
        if (!next_field(b, len, &i, &f)) {
            st = walk_bug(cx);
            break;
        }
        if (f.num == 1 && f.wt == 2) { /* name: the last one wins, as in protobuf */
            free(m->name);
            if (!(m->name = copy_bytes_str(f.p, f.len))) goto oom;
        } else if (f.num == 6 && f.wt == 0) {
            m->entry_computation_id = (int64_t)f.v;
        } else if (f.num == 3 && f.wt == 2) {
            size_t c = (size_t)m->n_comp;
            Pcpb__HloComputationProto *pc = (Pcpb__HloComputationProto *)unpack_part(
                cx, ar, &pcpb__hlo_computation_proto__descriptor, &f, "computation", c, &st);
            if (!pc) break;
            total += (int64_t)pc->n_instructions;
            if (total > INT32_MAX) {
                st = conv_fail(cx, PC_ERR_RANGE, "more than %d instructions", INT32_MAX);
                break;
            }
            m->n_comp = (int32_t)c + 1;
            if (!conv_comp(&m->comp[c], pc)) goto oom;
        }
    }
    if (!st && !m->name && !(m->name = copy_bytes_str(NULL, 0))) goto oom;
    if (!st) st = verify_module(cx, m);
    if (st) {
        pc_hlo_module_free(m);
        return st;
    }
    *out = m;
    return PC_OK;
oom:
    pc_hlo_module_free(m);
    return nomem(cx);
}

/* Appends config_index_to_node values (one varint or a packed list). */
static pc_status add_config_nodes(conv_ctx *cx, pc_hlo_tuned *t, const field *f) {
    size_t i = 0;
    do {
        uint64_t v = f->v;
        if (f->wt == 2 && !rd_varint(f->p, f->len, &i, &v)) return walk_bug(cx);
        if (v > INT32_MAX)
            return conv_fail(cx, PC_ERR_RANGE, "config_index_to_node[%d] = %llu is not a node "
                             "index", (int)t->n_config_nodes, (unsigned long long)v);
        t->config_index_to_node[t->n_config_nodes++] = (int64_t)v;
    } while (f->wt == 2 && i < f->len);
    return PC_OK;
}

/*
 * A ModuleTuningData's bytes -> module + runs. `index` >= 0 for the
 * index-th module of a TuningData (messages then say which one).
 */
static pc_status decode_tuned(conv_ctx *cx, arena *ar, const uint8_t *b, size_t len, int index,
                              pc_hlo_tuned *t) {
    memset(t, 0, sizeof *t);
    if (index >= 0) snprintf(cx->where, sizeof cx->where, "module %d", index);
    size_t i = 0, nmod = 0, nruns = 0, nids = 0;
    field f;
    while (i < len) {
        if (!next_field(b, len, &i, &f)) return walk_bug(cx);
        if (f.num == 1 && f.wt == 2) nmod++;
        else if (f.num == 3 && f.wt == 2) nruns++;
        else if (f.num == 4 && f.wt == 0) nids++;
        else if (f.num == 4 && f.wt == 2) {
            int64_t k = packed_count(0, f.p, f.len);
            if (k < 0) return walk_bug(cx);
            nids += (size_t)k;
        }
    }
    if (nmod > 1)
        return conv_fail(cx, PC_ERR_UNSUPPORTED, "the module field appears %zu times (a module "
                         "split over several fields is not supported)", nmod);
    if (nruns > INT32_MAX || nids > INT32_MAX)
        return conv_fail(cx, PC_ERR_RANGE, "%zu runs and %zu configurable nodes", nruns, nids);
    if (nruns && !(t->runs = pc_calloc_array(nruns, sizeof *t->runs))) return nomem(cx);
    if (nids && !(t->config_index_to_node = pc_malloc_array(nids, sizeof(int64_t))))
        return nomem(cx);
    pc_status st = PC_OK;
    for (i = 0; i < len && !st;) {
        if (!next_field(b, len, &i, &f)) return walk_bug(cx);
        if (f.num == 1 && f.wt == 2) {
            st = decode_module(cx, ar, f.p, f.len, &t->module);
            if (!st && index >= 0) {
                char nb[PC_HLO_NAME_BUF];
                snprintf(cx->where, sizeof cx->where, "module %d ('%s')", index,
                         pc_hlo_printable(t->module->name, nb));
            }
        } else if (f.num == 2 && f.wt == 0) {
            t->fingerprint = f.v;
        } else if (f.num == 3 && f.wt == 2) {
            int32_t r = t->n_runs;
            Pcpb__ConfigProfile *pr = (Pcpb__ConfigProfile *)unpack_part(
                cx, ar, &pcpb__config_profile__descriptor, &f, "run", (size_t)r, &st);
            if (!pr) break;
            t->n_runs = r + 1;
            st = conv_run(cx, r, pr, &t->runs[r]);
        } else if (f.num == 4 && (f.wt == 0 || f.wt == 2)) {
            st = add_config_nodes(cx, t, &f);
        }
    }
    return st;
}

/* ---- choosing the message type --------------------------------------------- */

/*
 * The three messages all start with field 1 (length-delimited), so the kind
 * is guessed from the other top-level fields and then confirmed by parsing:
 * fingerprint (2, varint) or config_index_to_node (4) mean ModuleTuningData;
 * entry_computation_name (2, string), id (5) or entry_computation_id (6)
 * mean HloModuleProto; field 1 alone means TuningData. Candidates are tried
 * in that order of likelihood.
 */
static int guess_order(const uint8_t *b, size_t len, pc_hlo_file_kind order[3]) {
    int f2v = 0, f2s = 0, f3 = 0, f4 = 0, f56 = 0, other = 0;
    size_t i = 0;
    while (i < len) {
        uint64_t key, x;
        if (!rd_varint(b, len, &i, &key)) break;
        uint64_t num = key >> 3;
        unsigned wt = (unsigned)(key & 7);
        if (wt == 0) {
            if (!rd_varint(b, len, &i, &x)) break;
        } else if (wt == 2) {
            if (!rd_varint(b, len, &i, &x) || x > len - i) break;
            i += (size_t)x;
        } else if (wt == 1 || wt == 5) {
            size_t n = wt == 1 ? 8 : 4;
            if (len - i < n) break;
            i += n;
        } else {
            break;
        }
        if (num == 2 && wt == 0) f2v = 1;
        else if (num == 2 && wt == 2) f2s = 1;
        else if (num == 3) f3 = 1;
        else if (num == 4) f4 = 1;
        else if (num == 5 || num == 6) f56 = 1;
        else if (num != 1) other = 1;
    }
    if (f2v || f4) {
        order[0] = PC_HLO_FILE_MODULE_TUNING_DATA, order[1] = PC_HLO_FILE_MODULE;
        order[2] = PC_HLO_FILE_TUNING_DATA;
    } else if (f2s || f56 || other) {
        order[0] = PC_HLO_FILE_MODULE, order[1] = PC_HLO_FILE_MODULE_TUNING_DATA;
        order[2] = PC_HLO_FILE_TUNING_DATA;
    } else if (f3) {
        order[0] = PC_HLO_FILE_MODULE_TUNING_DATA, order[1] = PC_HLO_FILE_MODULE;
        order[2] = PC_HLO_FILE_TUNING_DATA;
    } else {
        order[0] = PC_HLO_FILE_TUNING_DATA, order[1] = PC_HLO_FILE_MODULE_TUNING_DATA;
        order[2] = PC_HLO_FILE_MODULE;
    }
    return 3;
}

static const ProtobufCMessageDescriptor *descriptor_of(pc_hlo_file_kind k) {
    switch (k) {
    case PC_HLO_FILE_TUNING_DATA: return &pcpb__tuning_data__descriptor;
    case PC_HLO_FILE_MODULE_TUNING_DATA: return &pcpb__module_tuning_data__descriptor;
    case PC_HLO_FILE_MODULE: return &pcpb__hlo_module_proto__descriptor;
    }
    return NULL;
}

pc_status pc_hlo_tuning_parse(const uint8_t *buf, size_t len, const char *what,
                              pc_hlo_tuning **out, pc_error *err) {
    return pc_hlo_tuning_parse_max(buf, len, what, PC_MEMORY_AUTO, out, err);
}

pc_status pc_hlo_tuning_parse_max(const uint8_t *buf, size_t len, const char *what,
                                  uint64_t max_memory, pc_hlo_tuning **out, pc_error *err) {
    return pc_hlo_tuning_parse_progress(buf, len, what, max_memory, NULL, NULL, out, err);
}

pc_status pc_hlo_tuning_parse_progress(const uint8_t *buf, size_t len, const char *what,
                                       uint64_t max_memory, pc_progress_fn fn, void *user,
                                       pc_hlo_tuning **out, pc_error *err) {
    if (out) *out = NULL;
    if (len < PC_PROGRESS_MIN_BYTES) fn = NULL; /* a small file: no line to flash */
    if (!out || (!buf && len))
        return pc_fail(err, PC_ERR_ARG, "pc_hlo_tuning_parse: NULL argument");
    if (!what) what = "<memory>";
    if (len == 0) return pc_fail(err, PC_ERR_FORMAT, "%s: empty file, not a tuning protobuf", what);
    if (len > PC_HLO_PROTO_MAX_BYTES)
        return pc_fail(err, PC_ERR_UNSUPPORTED, "%s: %zu bytes; protobuf messages are limited to "
                       "2 GiB", what, len);

    /* Walk the wire format as each candidate message; the first that walks cleanly is parsed. */
    pc_hlo_file_kind order[3];
    guess_order(buf, len, order);
    walk w0;
    memset(&w0, 0, sizeof w0);
    int found = -1;
    uint64_t found_mem = 0;
    for (int c = 0; c < 3 && found < 0; c++) {
        walk w;
        memset(&w, 0, sizeof w);
        w.file = buf;
        if (walk_msg(&w, descriptor_of(order[c]), buf, len)) {
            if (w.mem > PC_HLO_PROTO_MAX_MEMORY)
                return pc_fail(err, PC_ERR_RANGE, "%s: parsing it as a %s would take %.1f GiB of "
                               "memory (corrupt counts?)", what, pc_hlo_file_kind_name(order[c]),
                               (double)w.mem / (1 << 30));
            found = c;
            found_mem = w.mem;
        } else if (c == 0) {
            w0 = w;
        }
    }
    if (found < 0)
        return pc_fail(err, PC_ERR_FORMAT, "%s: not a valid tuning protobuf, truncated or "
                       "corrupt (read as a %s): %s", what, pc_hlo_file_kind_name(order[0]), w0.msg);
    pc_hlo_file_kind kind = order[found];
    /* the file, the IR and one computation's arena, before anything is unpacked */
    char how[128];
    snprintf(how, sizeof how, " to read and parse it (the file and %d times what its messages "
             "unpack to)", PC_HLO_PROTO_BYTES_PER_UNPACKED);
    pc_status bst = pc_io_budget_check(pc_hlo_proto_parse_bound(len, found_mem), max_memory, what,
                                       how, err);
    if (bst) return bst;

    pc_status st = PC_OK;
    conv_ctx cx = {what, "", err};
    arena ar = {NULL, 0};
    pc_hlo_tuning *t = calloc(1, sizeof *t);
    if (!t) return nomem(&cx);
    t->file_kind = kind;
    if (fn) fn(user, "bytes decoded", 0, (int64_t)len);
    if (kind == PC_HLO_FILE_TUNING_DATA) {
        size_t i = 0, n = 0;
        field f;
        while (i < len && !st) {
            if (!next_field(buf, len, &i, &f)) st = walk_bug(&cx);
            else n += f.num == 1 && f.wt == 2;
        }
        if (!st && n > INT32_MAX) st = conv_fail(&cx, PC_ERR_RANGE, "%zu modules", n);
        if (!st && n && !(t->mods = pc_calloc_array(n, sizeof *t->mods))) st = nomem(&cx);
        for (i = 0; i < len && !st;) {
            if (!next_field(buf, len, &i, &f)) {
                st = walk_bug(&cx);
            } else if (f.num == 1 && f.wt == 2) {
                int32_t k = t->n_mods++;
                st = decode_tuned(&cx, &ar, f.p, f.len, k, &t->mods[k]);
                if (!st && fn && i < len) fn(user, "bytes decoded", (int64_t)i, (int64_t)len);
            }
        }
    } else {
        t->mods = calloc(1, sizeof *t->mods);
        if (!t->mods) st = nomem(&cx);
        else t->n_mods = 1;
        if (!st && kind == PC_HLO_FILE_MODULE_TUNING_DATA)
            st = decode_tuned(&cx, &ar, buf, len, -1, &t->mods[0]);
        else if (!st)
            st = decode_module(&cx, &ar, buf, len, &t->mods[0].module);
    }
    arena_release(&ar);
    if (st) {
        pc_hlo_tuning_free(t);
        return st;
    }
    if (fn) fn(user, "bytes decoded", (int64_t)len, (int64_t)len);
    *out = t;
    return PC_OK;
}

uint64_t pc_hlo_proto_parse_bound(size_t len, uint64_t unpacked) {
    const uint64_t k = PC_HLO_PROTO_BYTES_PER_UNPACKED;
    uint64_t ir = unpacked > UINT64_MAX / k ? UINT64_MAX : k * unpacked;
    return ir > UINT64_MAX - len ? UINT64_MAX : ir + len;
}

pc_status pc_hlo_tuning_read(const char *path, pc_hlo_tuning **out, pc_error *err) {
    return pc_hlo_tuning_read_max(path, PC_MEMORY_AUTO, out, err);
}

pc_status pc_hlo_tuning_read_max(const char *path, uint64_t max_memory, pc_hlo_tuning **out,
                                 pc_error *err) {
    return pc_hlo_tuning_read_progress(path, max_memory, NULL, NULL, out, err);
}

pc_status pc_hlo_tuning_read_progress(const char *path, uint64_t max_memory, pc_progress_fn fn,
                                      void *user, pc_hlo_tuning **out, pc_error *err) {
    if (out) *out = NULL;
    if (!path || !out) return pc_fail(err, PC_ERR_ARG, "pc_hlo_tuning_read: NULL argument");
    char *buf;
    size_t len;
    struct stat sb; /* a file that alone is over the budget is refused before it is read */
    if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0) {
        pc_status bst = pc_io_budget_check((uint64_t)sb.st_size, max_memory, path,
                                           " to read it", err);
        if (bst) return bst;
    }
    pc_status rd = pc_read_file_progress(path, PC_HLO_PROTO_MAX_BYTES, fn, user, &buf, &len, err);
    if (rd == PC_ERR_RANGE)
        return pc_fail(err, PC_ERR_UNSUPPORTED,
                       "%s: larger than 2 GiB; protobuf messages are limited to 2 GiB", path);
    if (rd) return rd;
    pc_status st = pc_hlo_tuning_parse_progress((const uint8_t *)buf, len, path, max_memory, fn,
                                                user, out, err);
    free(buf);
    return st;
}
