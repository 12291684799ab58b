/*
 * What a file that did not parse as HLO text is, when it is one of the
 * formats people hand to an HLO reader by mistake (text_internal.h):
 * StableHLO / MHLO MLIR (`jax.jit(f).lower(x).as_text()`), HloModuleProto
 * in protobuf text format (`hlo_module { ... }`), or binary data (a
 * serialized proto). The message says what was seen and how to get HLO text.
 */
#include <stdio.h>
#include <string.h>

#include "hlo/text_internal.h"

#define HOW_TO_GET_TEXT                                                                      \
    "HLO text comes from XLA's dumps (XLA_FLAGS=--xla_dump_to=DIR writes "                   \
    "DIR/*after_optimizations.txt; the directory itself can be read) or from JAX's "         \
    "jax.jit(f).lower(x).compile().as_text()"

static int word_at(const parser *p, size_t at, const char *w) {
    size_t n = strlen(w);
    return p->len - at >= n && memcmp(p->buf + at, w, n) == 0;
}

static size_t skip_blank(const parser *p, size_t i) {
    while (i < p->len && is_space((unsigned char)p->buf[i])) i++;
    return i;
}

/* The first control byte (not tab, newline, CR, FF, VT) in the first 4 KiB, or -1. */
static long control_byte(const parser *p) {
    size_t n = p->len < 4096 ? p->len : 4096;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p->buf[i];
        if ((c < 0x20 && !is_space(c)) || c == 0x7f) return (long)i;
    }
    return -1;
}

static int is_mlir(const parser *p, size_t at) {
    if (word_at(p, at, "func.func") || word_at(p, at, "\"builtin.module\"") || word_at(p, at, "#loc") ||
        word_at(p, at, "#map") || word_at(p, at, "stablehlo.") || word_at(p, at, "mhlo."))
        return 1;
    if (word_at(p, at, "func ") || word_at(p, at, "module")) {
        size_t i = at + (word_at(p, at, "module") ? 6 : 4);
        i = skip_blank(p, i);
        if (i < p->len && (p->buf[i] == '@' || word_at(p, i, "attributes"))) return 1;
        if (word_at(p, at, "module") && i < p->len && p->buf[i] == '{') {
            /* `module {` could be a computation named module: MLIR has func/ops inside */
            size_t n = p->len - i < 4096 ? p->len - i : 4096;
            for (size_t k = i; k + 5 < i + n; k++)
                if (word_at(p, k, "func.") || word_at(p, k, "stablehlo.") || word_at(p, k, "mhlo.")) return 1;
        }
    }
    return 0;
}

static int is_proto_text(const parser *p, size_t at) {
    static const char *const heads[] = {"hlo_module", "computations", "name:", "id:",
                                        "entry_computation_name:", "entry_computation_id:",
                                        "host_program_shape"};
    for (size_t k = 0; k < sizeof heads / sizeof heads[0]; k++) {
        if (!word_at(p, at, heads[k])) continue;
        size_t i = at + strlen(heads[k]);
        if (heads[k][strlen(heads[k]) - 1] == ':') return 1;
        i = skip_blank(p, i);
        if (i < p->len && p->buf[i] == '{') return 1;
    }
    return 0;
}

/* Past lines that start with '#' (protobuf text comments, lit `# RUN:` lines) and blanks;
 * MLIR's `#loc` / `#map` attribute aliases are not skipped. */
static size_t skip_hash_lines(const parser *p, size_t at) {
    while (at < p->len && p->buf[at] == '#' && !word_at(p, at, "#loc") && !word_at(p, at, "#map")) {
        while (at < p->len && p->buf[at] != '\n') at++;
        at = skip_blank(p, at);
    }
    return at;
}

int tx_sniff_format(parser *p, size_t at) {
    long bin = control_byte(p);
    at = skip_hash_lines(p, at);
    char what[40];
    size_t n = 0;
    if (at < p->len) {
        while (n < 24 && at + n < p->len && p->buf[at + n] != '\n' && p->buf[at + n] != '\r' &&
               (unsigned char)p->buf[at + n] >= 0x20 && (unsigned char)p->buf[at + n] < 0x7f)
            n++;
    }
    snprintf(what, sizeof what, "%.*s", (int)n, at < p->len ? p->buf + at : "");
    const char *kind = NULL, *advice = NULL;
    if (bin >= 0) {
        at = (size_t)bin;
        snprintf(what, sizeof what, "byte 0x%02x", (unsigned)(unsigned char)p->buf[bin]);
        kind = "binary data";
        advice = "a serialized protobuf (HloModuleProto, TpuGraphs tuning data) is read as one when its "
                 "name ends in .pb; " HOW_TO_GET_TEXT;
    } else if (at < p->len && is_mlir(p, at)) {
        kind = "StableHLO/MHLO MLIR";
        advice = "this is the lowered program before XLA compiles it; " HOW_TO_GET_TEXT;
    } else if (at < p->len && is_proto_text(p, at)) {
        kind = "an HloModuleProto in protobuf text format";
        advice = "write the module as HLO text (HloModule::ToString), or pass the binary proto (.pb); " HOW_TO_GET_TEXT;
    } else {
        return 0;
    }
    p->failed = 0; /* this replaces the parser's message */
    return tx_perr(p, at, PC_ERR_FORMAT, "expected HLO text, found %s ('%s'): %s", kind, what, advice);
}
