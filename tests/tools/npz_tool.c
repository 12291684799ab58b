/*
 * pc_npz_tool: drives the public NPY/NPZ API from the command line so the
 * script tests can check it against numpy and against must-fail files.
 *
 *   pc_npz_tool info    IN.npz                      member table and headers
 *   pc_npz_tool readall IN.npz [--threads N]        pc_npz_read_all, checked
 *                                                   against per-member reads;
 *                                                   prints key dtype shape sum
 *   pc_npz_tool read    IN.npz KEY OUT.npy          one member -> .npy
 *   pc_npz_tool copy    IN.npz OUT.npz [--compress] [--level N]
 *   pc_npz_tool rows    IN.npz KEY ROW0 NROWS OUT.npy
 *   pc_npz_tool rowsum  IN.npz KEY ROW0 NROWS       like rows, prints the sum
 *   pc_npz_tool load    IN.npy [OUT.npy]            pc_npy_load (+ save)
 *   pc_npz_tool map     IN.npy                      pc_npy_map, prints the sum
 *   pc_npz_tool header  IN.npy                      pc_npy_parse_header
 *   pc_npz_tool gen     OUT.npz KEY NROWS NCOLS [--compress] [--level N]
 *                       writes a uint8 (NROWS, NCOLS) array whose element
 *                       (r, c) is (r * 7 + c * 13) % 251
 *
 * The "sum" printed is sum over the array's bytes (native-endian, C order)
 * of byte[i] * (i + 1), modulo 2^64; the Python tests compute the same.
 * Output lines are tab-separated: key, dtype name, shape as "d0,d1,..."
 * (empty for 0-d), sum.
 *
 * Exit status: 0 on success, 1 on any pc_* failure (message on stderr as
 * "pc_npz_tool: error (<status name>): <message>"), 2 on usage errors,
 * 3 if two read paths disagree (a library bug).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfcast/npz.h"

static int fail(const pc_error *err) {
    fprintf(stderr, "pc_npz_tool: error (%s): %s\n", pc_status_name(err->code), err->msg);
    return 1;
}

static int usage(void) {
    fputs("usage: pc_npz_tool info|readall|read|copy|rows|rowsum|load|map|header|gen ...\n"
          "  (see tests/tools/npz_tool.c)\n",
          stderr);
    return 2;
}

static uint64_t checksum(const void *data, size_t n) {
    const unsigned char *p = data;
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++) s += (uint64_t)p[i] * (uint64_t)(i + 1);
    return s;
}

static void print_shape(FILE *f, int ndim, const int64_t *shape) {
    for (int d = 0; d < ndim; d++) fprintf(f, "%s%" PRId64, d ? "," : "", shape[d]);
}

static void print_array(const char *key, const pc_array *a) {
    printf("%s\t%s\t", key, pc_dtype_name(a->dtype));
    print_shape(stdout, a->ndim, a->shape);
    printf("\t%" PRIu64 "\n", checksum(a->data, pc_array_nbytes(a)));
}

static int same_array(const pc_array *a, const pc_array *b) {
    if (a->dtype != b->dtype || a->ndim != b->ndim) return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return 0;
    size_t n = pc_array_nbytes(a);
    if (n != pc_array_nbytes(b)) return 0;
    return n == 0 || memcmp(a->data, b->data, n) == 0;
}

static int parse_i64(const char *s, int64_t *out) {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end) {
        fprintf(stderr, "pc_npz_tool: not an integer: '%s'\n", s);
        return 0;
    }
    *out = (int64_t)v;
    return 1;
}

/* Parses trailing options shared by copy and gen; returns 0 on a bad one. */
static int parse_write_opts(int argc, char **argv, int first, pc_npz_compress *mode, int *level,
                            int *threads) {
    *mode = PC_NPZ_STORED;
    *level = 0;
    *threads = 0;
    for (int i = first; i < argc; i++) {
        int64_t v;
        if (strcmp(argv[i], "--compress") == 0) {
            *mode = PC_NPZ_DEFLATED;
        } else if (strcmp(argv[i], "--level") == 0 && i + 1 < argc && parse_i64(argv[i + 1], &v)) {
            *level = (int)v;
            i++;
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc &&
                   parse_i64(argv[i + 1], &v)) {
            *threads = (int)v;
            i++;
        } else {
            fprintf(stderr, "pc_npz_tool: unknown option '%s'\n", argv[i]);
            return 0;
        }
    }
    return 1;
}

static int cmd_info(const char *in) {
    pc_error err;
    pc_error_clear(&err);
    pc_npz *z = NULL;
    if (pc_npz_open(in, &z, &err) != PC_OK) return fail(&err);
    int rc = 0;
    int n = pc_npz_count(z);
    printf("%s\t%d members\n", pc_npz_path(z), n);
    for (int i = 0; i < n; i++) {
        pc_array_info info;
        if (pc_npz_info(z, i, &info, &err) != PC_OK) {
            rc = fail(&err);
            break;
        }
        printf("%s\t%s\t%" PRIu64 "\t%" PRIu64 "\t%s\t%s\t%s\t", pc_npz_key(z, i),
               pc_npz_is_stored(z, i) ? "stored" : "deflated", pc_npz_member_size(z, i),
               pc_npz_member_csize(z, i), pc_dtype_name(info.dtype),
               info.big_endian ? "big" : "little", info.fortran_order ? "F" : "C");
        print_shape(stdout, info.ndim, info.shape);
        printf("\t%" PRId64 "\t%" PRIu64 "\t%" PRIu64 "\n", info.count, info.data_bytes,
               info.data_offset);
    }
    pc_npz_close(z);
    return rc;
}

static int cmd_readall(const char *in, int threads) {
    pc_error err;
    pc_error_clear(&err);
    pc_npz *z = NULL;
    if (pc_npz_open(in, &z, &err) != PC_OK) return fail(&err);
    int n = pc_npz_count(z);
    int rc = 0;
    pc_array *all = calloc(n > 0 ? (size_t)n : 1, sizeof *all);
    if (!all) {
        pc_npz_close(z);
        fputs("pc_npz_tool: out of memory\n", stderr);
        return 1;
    }
    if (pc_npz_read_all(z, all, threads, &err) != PC_OK) {
        rc = fail(&err);
        goto done;
    }
    for (int i = 0; i < n && rc == 0; i++) {
        pc_array one = PC_ARRAY_INIT;
        if (pc_npz_read(z, i, &one, &err) != PC_OK) {
            rc = fail(&err);
            break;
        }
        if (!same_array(&one, &all[i])) {
            fprintf(stderr, "pc_npz_tool: %s: member '%s': pc_npz_read_all and pc_npz_read disagree\n",
                    in, pc_npz_key(z, i));
            rc = 3;
        } else {
            print_array(pc_npz_key(z, i), &all[i]);
        }
        pc_array_free(&one);
    }
done:
    for (int i = 0; i < n; i++) pc_array_free(&all[i]);
    free(all);
    pc_npz_close(z);
    return rc;
}

static int cmd_read(const char *in, const char *key, const char *out) {
    pc_error err;
    pc_error_clear(&err);
    pc_npz *z = NULL;
    if (pc_npz_open(in, &z, &err) != PC_OK) return fail(&err);
    int rc = 0;
    pc_array a = PC_ARRAY_INIT;
    int i = pc_npz_find(z, key);
    if (i < 0) {
        fprintf(stderr, "pc_npz_tool: %s: no member '%s'\n", in, key);
        rc = 1;
    } else if (pc_npz_read(z, i, &a, &err) != PC_OK || pc_npy_save(out, &a, &err) != PC_OK) {
        rc = fail(&err);
    }
    pc_array_free(&a);
    pc_npz_close(z);
    return rc;
}

static int cmd_copy(const char *in, const char *out, pc_npz_compress mode, int level) {
    pc_error err;
    pc_error_clear(&err);
    pc_npz *z = NULL;
    if (pc_npz_open(in, &z, &err) != PC_OK) return fail(&err);
    pc_npz_writer *w = NULL;
    if (pc_npz_writer_open(out, mode, &w, &err) != PC_OK) {
        pc_npz_close(z);
        return fail(&err);
    }
    if (level) pc_npz_writer_set_level(w, level);
    int n = pc_npz_count(z);
    for (int i = 0; i < n; i++) {
        pc_array a = PC_ARRAY_INIT;
        if (pc_npz_read(z, i, &a, &err) != PC_OK ||
            pc_npz_writer_add_array(w, pc_npz_key(z, i), &a, &err) != PC_OK) {
            pc_array_free(&a);
            pc_npz_writer_abort(w);
            pc_npz_close(z);
            return fail(&err);
        }
        pc_array_free(&a);
    }
    pc_npz_close(z);
    if (pc_npz_writer_commit(w, &err) != PC_OK) return fail(&err);
    return 0;
}

static int cmd_rows(const char *in, const char *key, int64_t row0, int64_t nrows, const char *out) {
    pc_error err;
    pc_error_clear(&err);
    pc_npz *z = NULL;
    if (pc_npz_open(in, &z, &err) != PC_OK) return fail(&err);
    int rc = 0;
    pc_array a = PC_ARRAY_INIT;
    int i = pc_npz_find(z, key);
    if (i < 0) {
        fprintf(stderr, "pc_npz_tool: %s: no member '%s'\n", in, key);
        rc = 1;
    } else if (pc_npz_read_rows(z, i, row0, nrows, &a, &err) != PC_OK) {
        rc = fail(&err);
    } else if (out && pc_npy_save(out, &a, &err) != PC_OK) {
        rc = fail(&err);
    } else if (!out) {
        print_array(key, &a);
    }
    pc_array_free(&a);
    pc_npz_close(z);
    return rc;
}

static int cmd_load(const char *in, const char *out, int map) {
    pc_error err;
    pc_error_clear(&err);
    pc_array a = PC_ARRAY_INIT;
    pc_status st = map ? pc_npy_map(in, &a, &err) : pc_npy_load(in, &a, &err);
    if (st != PC_OK) return fail(&err);
    int rc = 0;
    print_array(in, &a);
    if (out && pc_npy_save(out, &a, &err) != PC_OK) rc = fail(&err);
    pc_array_free(&a);
    return rc;
}

static int cmd_header(const char *in) {
    FILE *f = fopen(in, "rb");
    if (!f) {
        perror(in);
        return 1;
    }
    static unsigned char buf[1 << 16];
    size_t len = fread(buf, 1, sizeof buf, f);
    uint64_t size = UINT64_MAX;
    if (fseek(f, 0, SEEK_END) == 0) {
        long end = ftell(f);
        if (end >= 0) size = (uint64_t)end;
    }
    fclose(f);
    pc_error err;
    pc_error_clear(&err);
    pc_array_info info;
    if (pc_npy_parse_header(buf, len, size, in, &info, &err) != PC_OK) return fail(&err);
    printf("%s\t%s\t%s\t", pc_dtype_name(info.dtype), info.big_endian ? "big" : "little",
           info.fortran_order ? "F" : "C");
    print_shape(stdout, info.ndim, info.shape);
    printf("\t%" PRId64 "\t%" PRIu64 "\t%" PRIu64 "\n", info.count, info.data_bytes,
           info.data_offset);
    return 0;
}

static int cmd_gen(const char *out, const char *key, int64_t nrows, int64_t ncols,
                   pc_npz_compress mode, int level) {
    pc_error err;
    pc_error_clear(&err);
    pc_array a = PC_ARRAY_INIT;
    int64_t shape[2] = {nrows, ncols};
    if (pc_array_alloc(&a, PC_DTYPE_U8, 2, shape, &err) != PC_OK) return fail(&err);
    unsigned char *p = a.data;
    /* (r*7 + c*13) % 251, computed incrementally */
    for (int64_t r = 0; r < nrows; r++) {
        unsigned v = (unsigned)((r % 251) * 7 % 251);
        unsigned char *row = p + (size_t)r * (size_t)ncols;
        for (int64_t c = 0; c < ncols; c++) {
            row[c] = (unsigned char)v;
            v += 13;
            if (v >= 251) v -= 251;
        }
    }
    pc_npz_writer *w = NULL;
    int rc = 0;
    if (pc_npz_writer_open(out, mode, &w, &err) != PC_OK) {
        rc = fail(&err);
    } else {
        if (level) pc_npz_writer_set_level(w, level);
        if (pc_npz_writer_add_array(w, key, &a, &err) != PC_OK) {
            pc_npz_writer_abort(w);
            rc = fail(&err);
        } else if (pc_npz_writer_commit(w, &err) != PC_OK) {
            rc = fail(&err);
        }
    }
    pc_array_free(&a);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 3) return usage();
    const char *cmd = argv[1];
    pc_npz_compress mode;
    int level, threads;
    int64_t a, b;
    if (strcmp(cmd, "info") == 0 && argc == 3) return cmd_info(argv[2]);
    if (strcmp(cmd, "readall") == 0) {
        if (!parse_write_opts(argc, argv, 3, &mode, &level, &threads)) return 2;
        return cmd_readall(argv[2], threads);
    }
    if (strcmp(cmd, "read") == 0 && argc == 5) return cmd_read(argv[2], argv[3], argv[4]);
    if (strcmp(cmd, "copy") == 0 && argc >= 4) {
        if (!parse_write_opts(argc, argv, 4, &mode, &level, &threads)) return 2;
        return cmd_copy(argv[2], argv[3], mode, level);
    }
    if (strcmp(cmd, "rows") == 0 && argc == 7) {
        if (!parse_i64(argv[4], &a) || !parse_i64(argv[5], &b)) return 2;
        return cmd_rows(argv[2], argv[3], a, b, argv[6]);
    }
    if (strcmp(cmd, "rowsum") == 0 && argc == 6) {
        if (!parse_i64(argv[4], &a) || !parse_i64(argv[5], &b)) return 2;
        return cmd_rows(argv[2], argv[3], a, b, NULL);
    }
    if (strcmp(cmd, "load") == 0 && (argc == 3 || argc == 4))
        return cmd_load(argv[2], argc == 4 ? argv[3] : NULL, 0);
    if (strcmp(cmd, "map") == 0 && argc == 3) return cmd_load(argv[2], NULL, 1);
    if (strcmp(cmd, "header") == 0 && argc == 3) return cmd_header(argv[2]);
    if (strcmp(cmd, "gen") == 0 && argc >= 6) {
        if (!parse_i64(argv[4], &a) || !parse_i64(argv[5], &b)) return 2;
        if (!parse_write_opts(argc, argv, 6, &mode, &level, &threads)) return 2;
        return cmd_gen(argv[2], argv[3], a, b, mode, level);
    }
    return usage();
}
