/*
 * Fuzz target: the analytic model's readers of outside text. The first byte
 * picks the reader, the rest is its input:
 *   0: chip JSON (pc_chipdb_load_json)      1: HF config.json (pc_tfm_from_hf_json)
 *   2: op descriptions, text or JSON (pc_ops_parse)
 * Whatever is accepted must keep the readers' promises: chips validate and
 * are found by name, models pass pc_tfm_check and give finite, non-negative
 * counts, ops cost finite, non-negative FLOPs and bytes. A rejected input
 * must come with a message; a failed chip load leaves the database as it was.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "perfcast/analytic.h"

static int finite_nonneg(double v) { return isfinite(v) && v >= 0; }

static void fuzz_chips(const char *text, size_t len) {
    pc_chipdb *db = NULL;
    pc_error err;
    check(pc_chipdb_new(&db, &err) == PC_OK);
    int n0 = pc_chipdb_count(db);
    pc_status st = pc_chipdb_load_json(db, text, len, "fuzz", &err);
    if (st != PC_OK) {
        check(err.msg[0] != '\0');
        check(pc_chipdb_count(db) == n0);
    }
    for (int i = 0; i < pc_chipdb_count(db); i++) {
        const pc_chip *c = pc_chipdb_at(db, i);
        check(pc_chip_validate(c, &err) == PC_OK);
        check(pc_chipdb_find(db, c->name) != NULL);
        for (int l = 0; l < PC_LINK_COUNT; l++)
            check(finite_nonneg(pc_chip_critical_intensity(c, PC_PREC_BF16, (pc_link)l)));
        /* a small collective on every chip must not misbehave */
        pc_mesh m;
        check(pc_mesh_parse("2x2", &m, &err) == PC_OK);
        if (pc_mesh_check(c, &m, &err) == PC_OK) {
            pc_coll_cost r;
            if (pc_collective_cost(c, &m, 3, PC_COLL_ALLREDUCE, 1e6, &r, &err) == PC_OK)
                check(finite_nonneg(r.time));
        }
    }
    pc_chipdb_free(db);
}

static void fuzz_model(const char *text, size_t len) {
    pc_tfm_cfg m;
    pc_error err;
    pc_status st = pc_tfm_from_hf_json(text, len, "fuzz", &m, &err);
    if (st != PC_OK) {
        check(err.msg[0] != '\0');
        return;
    }
    pc_tfm_cfg again = m;
    check(pc_tfm_check(&again, &err) == PC_OK);
    pc_param_counts p;
    pc_tfm_params(&m, &p);
    check(finite_nonneg(p.total) && finite_nonneg(p.active) && p.active <= p.total);
    pc_flop_counts f;
    pc_tfm_flops(&m, 4096, 0, PC_REMAT_FULL, &f);
    check(finite_nonneg(f.train) && finite_nonneg(f.train_remat));
    pc_mem_opts mo = pc_mem_opts_default();
    mo.tokens = 4096;
    pc_train_memory mem;
    check(pc_tfm_memory(&m, &mo, &mem, &err) == PC_OK);
    check(finite_nonneg(mem.total));
    check(finite_nonneg(pc_tfm_kv_bytes_per_token(&m, PC_PREC_BF16)));
}

static void fuzz_ops(const char *text, size_t len) {
    pc_op *ops = NULL;
    size_t n = 0;
    pc_error err;
    pc_status st = pc_ops_parse(text, len, "fuzz", &ops, &n, &err);
    if (st != PC_OK) {
        check(ops == NULL && err.msg[0] != '\0');
        return;
    }
    check(n > 0 && ops != NULL);
    const pc_chip *v5e = NULL;
    for (int i = 0; i < pc_chip_builtin_count(); i++)
        if (!strcmp(pc_chip_builtin(i)->name, "v5e")) v5e = pc_chip_builtin(i);
    check(v5e != NULL);
    for (size_t i = 0; i < n; i++) {
        pc_cost c;
        if (pc_op_cost(&ops[i], &c, &err) != PC_OK) {
            check(err.code == PC_ERR_RANGE); /* sizes overflowing a double */
            continue;
        }
        check(finite_nonneg(c.flops) && finite_nonneg(c.bytes) && finite_nonneg(c.comm_bytes));
        pc_roofline r;
        if (pc_roofline_eval(v5e, &c, 0, &r, &err) == PC_OK) check(finite_nonneg(r.time));
    }
    pc_ops_free(ops);
}

PC_FUZZ_TARGET(analytic) {
    if (size == 0) return 0;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    switch (data[0] % 3) {
    case 0: fuzz_chips(text, len); break;
    case 1: fuzz_model(text, len); break;
    default: fuzz_ops(text, len); break;
    }
    return 0;
}
