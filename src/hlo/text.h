/*
 * HLO text (XLA dumps: --xla_dump_to=DIR *.txt, and XLA's test-style .hlo
 * files) <-> the in-memory HLO IR (hlo_ir.h). Internal API.
 *
 * Parser. Accepts one or more modules, split where XLA's tools split them:
 * at a line that is exactly "// -----" (other comments, "// -------" banners
 * included, are comments) and at each further `HloModule` line. A UTF-8 byte
 * order mark at the start is skipped. A module is an optional
 * `HloModule name[:], attr=value, ...` line
 * followed by computations `[ENTRY] name [(params) -> shape] { ... }`; without
 * an ENTRY the entry is the last computation that no other one calls (the
 * last one in XLA's test files); an ENTRY that is called is an error. Newer
 * dumps' FileNames/FunctionNames/FileLocations/StackFrames tables and
 * `}, execution_thread=...` after a computation are skipped. Instructions are
 * `[ROOT] name = shape opcode(operands), attr=value, ...` and may span lines.
 * As in XLA: the shape may be omitted where XLA infers it (text_infer.c
 * lists the opcodes perfcast infers); an operand may be a nested
 * instruction `add(f32[] multiply(a, b), c)` (no attributes; named
 * "<opcode>.anon[.N]" and placed after its user); a single-computation
 * attribute may hold an inline body `to_apply={ ... }` (a computation named
 * "_inline.N"); shapes may be buffers `b(f32[4])`; a layout may follow the
 * dimensions after blanks; an operand name may carry `#N` (ignored);
 * `literal=SHAPE VALUE` and `replica_groups=mesh[...] {...}` are skipped;
 * dim_labels may hold '?'.
 * Known attributes fill the IR (dimensions, iota_dimension, window, dim_labels,
 * slice, padding, dynamic_slice_sizes, feature/batch_group_count, is_stable,
 * to_apply/calls/body/condition/select/scatter/true_computation/
 * false_computation/branch_computations/called_computations); any other
 * lhs/rhs_contracting_dims and lhs/rhs_batch_dims fill the IR's dot
 * dimension numbers (not featurized; for hlo/cost.c); any other
 * attribute is skipped (balanced braces, strings with escapes): literals,
 * metadata, backend_config, gather/scatter dimension numbers are not in
 * the IR (not featurized). Unknown opcodes get opcode_id 0 and are counted.
 *
 * Ids (text has none): computations are put in HloModuleProto order (callees
 * before callers, by a depth-first post-order over the calls in text order;
 * the entry last) and numbered 1..n in that order; instructions are numbered
 * 1..N across the module in that computation order, then text order. Operands
 * may be referenced before their definition; cycles are errors.
 *
 * Values XLA would fill when parsing text, filled the same way: a missing
 * layout on an array shape is the default {rank-1,...,0}; window fields not
 * given are stride 1, padding 0, dilations 1, no reversal; convolution and
 * custom-call get feature/batch_group_count 1 when not given; parameter_number
 * is -1 for non-parameters; `[?]` (unbounded dynamic) is INT64_MIN like XLA's
 * kUnboundedSize (the featurizer writes it as -1), `[<=N]` is N.
 *
 * Not HLO text: when the first module fails to parse and the input is
 * StableHLO/MHLO MLIR, HloModuleProto protobuf text or binary data, the
 * message says so and how to get HLO text (text_sniff.c).
 *
 * Errors are PC_ERR_FORMAT (PC_ERR_NOMEM, PC_ERR_RANGE for limits) with
 * "PATH:LINE:COLUMN: expected ..." in err->msg. Nesting of braces, brackets
 * and tuple shapes is bounded (PC_HLO_TEXT_MAX_DEPTH).
 */
#ifndef PC_HLO_TEXT_H
#define PC_HLO_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hlo/hlo_ir.h"

#define PC_HLO_TEXT_MAX_DEPTH 128

/* Attributes the parser keeps as text in pc_hlo_instruction.attrs for hlo/cost.c (the rest
 * of what the IR has no field for is skipped): custom_call_target, replica_groups, direction
 * (compare), fft_type, fft_length, source_target_pairs, index (get-tuple-element),
 * backend_config of custom-calls and whiles, and "literal" (the text inside the parentheses) of scalar constants. Tuple element
 * shapes are kept in pc_hlo_shape.tuple_shapes. */

typedef struct pc_hlo_text_stats {
    int64_t unknown_opcodes;   /* instructions whose opcode is not in the TpuGraphs table */
    int64_t skipped_attrs;     /* attributes not stored in the IR (metadata, kind, ...) */
    char first_unknown[64];    /* the first unknown opcode, "" if none */
} pc_hlo_text_stats;

/*
 * Parses `len` bytes of HLO text (need not be NUL-terminated). `path` names
 * the input in messages (NULL -> "<hlo>"). On success *mods is a malloc'd
 * array of *nmods >= 1 modules (free with pc_hlo_modules_free); on failure
 * *mods = NULL, *nmods = 0. stats may be NULL.
 */
pc_status pc_hlo_parse_text(const char *buf, size_t len, const char *path, pc_hlo_module ***mods,
                            int *nmods, pc_hlo_text_stats *stats, pc_error *err);

/*
 * Progress of reading and parsing a large input (perfcast/perfcast.h,
 * pc_progress_fn): texts of PC_HLO_PROGRESS_MIN_BYTES or more report
 * "bytes parsed" (done of total bytes) at the start, about every
 * PC_HLO_PROGRESS_STEP_BYTES and at the end; smaller ones never call it (a
 * line would only flash). Files read in pieces report "bytes read" the same way.
 */
#define PC_HLO_PROGRESS_MIN_BYTES (4u << 20)  /* = PC_PROGRESS_MIN_BYTES (common/util.h) */
#define PC_HLO_PROGRESS_STEP_BYTES (1u << 20) /* = PC_PROGRESS_STEP_BYTES */

/* pc_hlo_parse_text with progress (NULL: none); the results are the same. */
pc_status pc_hlo_parse_text_progress(const char *buf, size_t len, const char *path,
                                     pc_progress_fn progress, void *user, pc_hlo_module ***mods,
                                     int *nmods, pc_hlo_text_stats *stats, pc_error *err);

/*
 * Reads a whole file and parses it (pc_hlo_parse_text). `path` may also be
 * an XLA dump directory (its *after_optimizations.txt files) or a pattern
 * in its last component (such as *before_optimizations.txt); every matching
 * file is parsed, in name order, and their modules returned together. A
 * directory with no matching file is PC_ERR_INVALID saying what it holds.
 */
pc_status pc_hlo_read_text_file(const char *path, pc_hlo_module ***mods, int *nmods,
                                pc_hlo_text_stats *stats, pc_error *err);

/*
 * pc_hlo_read_text_file within a memory budget (bytes, or PC_MEMORY_AUTO as
 * perfcast/npz.h defines it), for the whole read: the modules of a dump
 * directory's files are all kept, so each file is checked with what the
 * files before it may hold (their bounds less their text, which is freed)
 * added ("..., with the modules of the files before it"). A file whose size alone needs more
 * (pc_hlo_text_parse_bound counts 1 + PC_HLO_TEXT_BYTES_PER_BYTE bytes per
 * byte) is refused before it is read, then its text's bound is checked
 * before it is parsed. Over: PC_ERR_NOMEM "PATH needs N in memory to read and
 * parse it (...), more than the memory budget of B (max_memory)".
 * pc_hlo_read_text_file is this with PC_MEMORY_AUTO.
 */
pc_status pc_hlo_read_text_file_max(const char *path, uint64_t max_memory, pc_hlo_module ***mods,
                                    int *nmods, pc_hlo_text_stats *stats, pc_error *err);

/* How files are read (pc_hlo_read_text_file_opts). */
typedef struct pc_hlo_read_opts {
    uint64_t max_memory;     /* as pc_hlo_read_text_file_max */
    pc_progress_fn progress; /* "bytes read" and "bytes parsed" of each large file; NULL: none */
    void *progress_user;
} pc_hlo_read_opts;

/* pc_hlo_read_text_file_max with progress (o may be NULL: PC_MEMORY_AUTO, no progress). */
pc_status pc_hlo_read_text_file_opts(const char *path, const pc_hlo_read_opts *o,
                                     pc_hlo_module ***mods, int *nmods, pc_hlo_text_stats *stats,
                                     pc_error *err);

/*
 * The memory parsing `len` bytes of HLO text may take at its peak, the text
 * included: PC_HLO_TEXT_BYTES_PER_PAREN per '(' (every instruction, nested
 * ones too, has one: its struct, names, tables, growth slack) and
 * PC_HLO_TEXT_BYTES_PER_BYTE per byte (lists: a dimension of 2 bytes of text
 * becomes a dimension and a layout entry; a window size 7 lists). Measured
 * worst cases (bench/RESULTS.md, issue #18, "HLO parse memory per
 * instruction"): 2M nested shapeless `negate(` 797 MiB for 16.2 MB of text
 * (bound 1118 MiB), 300k one-line `aN=negate(p),slice={}` 228 MiB for 8.0 MB
 * (bound 300 MiB), 60-dimension windows 29 MiB for 3.4 MB (bound 82 MiB).
 */
#define PC_HLO_TEXT_BYTES_PER_PAREN 384
#define PC_HLO_TEXT_BYTES_PER_BYTE 24
uint64_t pc_hlo_text_parse_bound(const char *buf, size_t len);

/* What pc_hlo_read_text_file makes of a path (a missing file is a FILE). */
enum { PC_HLO_PATH_FILE, PC_HLO_PATH_DIR, PC_HLO_PATH_PATTERN };
int pc_hlo_text_path_kind(const char *path);

/* Frees an array from pc_hlo_parse_text (NULL ok). */
void pc_hlo_modules_free(pc_hlo_module **mods, int nmods);

/*
 * Writes HLO text of a module that parses back (pc_hlo_parse_text) to the
 * same IR fields (shapes with layouts, operands, roots, parameter numbers,
 * dimensions, window, dim_labels, slice, padding, dynamic_slice_sizes, group
 * counts, is_stable, dot dimension numbers (non-empty lists), called computations, names and computation order).
 * Ids are not printed; the parser renumbers them (see above), so a module
 * whose ids are not already 1..n in order compares equal after renumbering.
 * Not representable, and reported as PC_ERR_UNSUPPORTED: element types
 * outside xla.PrimitiveType, convolution dimension numbers that do not form
 * dim_labels. Tuple element shapes are not in the IR: a tuple of k elements
 * is printed as k empty tuples "()".
 */
pc_status pc_hlo_print_text(const pc_hlo_module *m, FILE *out, pc_error *err);
/* The same into a malloc'd NUL-terminated string (*len excludes the NUL). */
pc_status pc_hlo_print_text_buf(const pc_hlo_module *m, char **text, size_t *len, pc_error *err);

#endif /* PC_HLO_TEXT_H */
