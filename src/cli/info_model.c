/*
 * perfcast info MODEL: what a checkpoint is (collection, architecture,
 * encodings, ensemble, how it was trained and on what, its validation
 * score), from its metadata, without building the model.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "perfcast/safetensors.h"

/* A number or string field as text (dflt when absent). */
static const char *field_or(const cJSON *o, const char *k, char *buf, size_t cap,
                            const char *dflt) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (cJSON_IsString(v)) return v->valuestring;
    if (cJSON_IsNumber(v)) {
        snprintf(buf, cap, "%.6g", v->valuedouble);
        return buf;
    }
    if (cJSON_IsBool(v)) return cJSON_IsTrue(v) ? "yes" : "no";
    return dflt;
}

static const char *field(const cJSON *o, const char *k, char *buf, size_t cap) {
    return field_or(o, k, buf, cap, "-");
}

int pc_cli_is_model(const char *path) {
    pc_st *r = NULL;
    if (pc_st_open(path, &r, NULL) != PC_OK) return 0;
    int yes = pc_st_meta(r, "perfcast") != NULL;
    pc_st_close(r);
    return yes;
}

static void print_text(const char *path, const cJSON *m, double params) {
    char b[10][64];
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(m, "architecture");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(m, "train");
    const cJSON *d = t ? cJSON_GetObjectItemCaseSensitive(t, "data") : NULL;
    printf("%s: perfcast checkpoint (%s v%s), %.0f parameters\n", path,
           field(m, "format", b[0], 64), field(m, "version", b[1], 64), params);
    printf("collection     %s\n", field(m, "collection", b[0], 64));
    printf("architecture   hidden %s, layers %s, opcode embedding %s, pool %s, join %s, act %s, "
           "layernorm %s, dropout %s\n",
           field(a, "hidden", b[0], 64), field(a, "layers", b[1], 64), field(a, "emb_dim", b[2], 64),
           field(a, "pool", b[3], 64), field(a, "join", b[4], 64), field(a, "act", b[5], 64),
           field(a, "layernorm", b[6], 64), field(a, "dropout", b[7], 64));
    printf("inputs         %s node features (%s kept), %s config features (%s kept), "
           "encodings (bits) %s, prune hops %s, attention heads %s, GST %s\n",
           field(a, "node_in_dim", b[0], 64), field(a, "feat_dim", b[1], 64),
           field(a, "cfg_in_dim", b[2], 64), field(a, "cfg_dim", b[3], 64),
           field_or(a, "encode", b[4], 64, "none"), field_or(a, "prune_hops", b[5], 64, "0"),
           field_or(a, "attn_heads", b[6], 64, "off"),
           cJSON_GetObjectItemCaseSensitive(a, "gst") ? "yes" : "no");
    const cJSON *ens = cJSON_GetObjectItemCaseSensitive(m, "ensemble");
    if (cJSON_IsNumber(ens)) printf("ensemble       %d members\n", ens->valueint);
    if (t) {
        printf("training       seed %s, %s epochs run (best %s; asked %s, patience %s), %s "
               "configs per graph, lr %s, weight decay %s, clip %s, time budget %s s\n",
               field(t, "seed", b[0], 64), field(t, "epochs_run", b[1], 64),
               field(t, "best_epoch", b[2], 64), field(t, "epochs", b[3], 64),
               field(t, "patience", b[4], 64), field(t, "configs", b[5], 64),
               field(t, "lr", b[6], 64), field(t, "weight_decay", b[7], 64),
               field(t, "clip", b[8], 64), field(t, "time_budget", b[9], 64));
        printf("loss           %s, sampling %s, dedup %s\n", field(t, "loss", b[0], 64),
               field(t, "sampling", b[1], 64), field_or(t, "dedup", b[2], 64, "no"));
    }
    if (d)
        printf("data           %s train and %s valid graphs (content id %s)\n",
               field(d, "train_graphs", b[0], 64), field(d, "valid_graphs", b[1], 64),
               field(d, "id", b[2], 64));
    printf("validation     %s %s\n", field(m, "metric", b[0], 64), field(m, "best_metric", b[1], 64));
}

int pc_cli_info_model(const char *path, int json, cJSON *one) {
    pc_st *r = NULL;
    pc_error e;
    if (pc_st_open(path, &r, &e) != PC_OK) return pc_cli_fail(&e);
    const char *meta = pc_st_meta(r, "perfcast");
    cJSON *m = meta ? cJSON_Parse(meta) : NULL;
    double params = 0;
    for (int i = 0; i < pc_st_count(r); i++)
        if (strstr(pc_st_name(r, i), "param.")) params += (double)pc_st_nbytes(r, i) / 4;
    pc_st_close(r);
    if (!m) {
        e.code = PC_ERR_FORMAT;
        snprintf(e.msg, sizeof e.msg,
                 "%s: not a perfcast checkpoint (metadata 'perfcast' "
                 "missing or malformed)",
                 path);
        return pc_cli_fail(&e);
    }
    if (json && one) {
        cJSON_AddStringToObject(one, "kind", "checkpoint");
        cJSON_AddNumberToObject(one, "parameters", params);
        cJSON_AddItemToObject(one, "model", m);
        return PC_EXIT_OK;
    }
    print_text(path, m, params);
    cJSON_Delete(m);
    return PC_EXIT_OK;
}
