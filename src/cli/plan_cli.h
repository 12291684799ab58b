/* Shared pieces of `perfcast plan train` and `perfcast plan serve`: option
 * codes, count / precision / flag-value parsing, model loading, slice
 * resolution, number formatting. */
#ifndef PC_PLAN_CLI_H
#define PC_PLAN_CLI_H

#include <stddef.h>

#include "analytic_cli.h"
#include "perfcast/calib.h"

#define PC_PCLI_TRAIN "plan train"
#define PC_PCLI_SERVE "plan serve"

/* getopt_long codes of the long options of both subcommands (one list, so an
 * option both take, like --chips, has one code and one parser). */
enum {
    PC_PO_MODEL = 256,
    PC_PO_CALIB,
    PC_PO_PRESET,
    PC_PO_CHIP,
    PC_PO_CHIPS,
    PC_PO_SLICE,
    PC_PO_CHIPSFILE,
    PC_PO_BATCH,
    PC_PO_SEQ,
    PC_PO_TOKENS,
    PC_PO_PRICE,
    PC_PO_EFF,
    PC_PO_ATTN,
    PC_PO_REMAT,
    PC_PO_ZERO,
    PC_PO_DP,
    PC_PO_FSDP,
    PC_PO_TP,
    PC_PO_PP,
    PC_PO_EP,
    PC_PO_MICRO,
    PC_PO_OPT,
    PC_PO_MASTER,
    PC_PO_WDT,
    PC_PO_GDT,
    PC_PO_ADT,
    PC_PO_TOP,
    PC_PO_KVDT,
    PC_PO_CONTEXT,
    PC_PO_PREFILL,
    PC_PO_DECODE,
    PC_PO_SBATCH,
    PC_PO_BOOK,
    PC_PO_PMICRO,
    PC_PO_MBS,
    PC_PO_VP,
    PC_PO_CP,
    PC_PO_CONC,
    PC_PO_REPL,
    PC_PO_ADP,
    PC_PO_CONFIG,
    PC_PO_SVG
};

/* The subcommands (cmd_plan_train.c, cmd_plan_serve.c); argv[0] is the
 * subcommand's name. */
int pc_pcli_train(int argc, char **argv);
int pc_pcli_serve(int argc, char **argv);

/* A count in the one vocabulary (pc_parse_count: "4M" = 4e6, "4Mi" = 2^22,
 * "15T", "300B", "1.5e13") or a product of two ("1024x4096"); 0 on success. */
int pc_pcli_parse_count(const char *s, double *out);

/* Flag values both subcommands take. Each returns -1 on success, else the
 * exit code after printing a message that names the flag. */
int pc_pcli_parse_prec(const char *cmd, const char *flag, const char *v, pc_prec *out);
/* --chips N; example: the count the message suggests ("8960") */
int pc_pcli_parse_chips(const char *cmd, const char *v, const char *example, long long *out);
int pc_pcli_parse_efficiency(const char *cmd, const char *v, double *out);
int pc_pcli_parse_price(const char *cmd, const char *v, double *out);
int pc_pcli_parse_attention(const char *cmd, const char *v, pc_attn_flops *out);

/* --model X (a config.json path or a preset name) or --preset NAME. Returns
 * -1 or an exit code. */
int pc_pcli_load_model(const char *cmd, const char *model, const char *preset, pc_tfm_cfg *m);
/* Resolves --chips / --slice into a checked mesh. Returns -1 or an exit code. */
int pc_pcli_resolve_slice(const char *cmd, const pc_chip *chip, long long chips,
                          const char *slice_s, pc_mesh *mesh);

/* "28x20x16", "16x16(DCN)x16" */
void pc_pcli_mesh_str(const pc_mesh *m, char *buf, size_t cap);
/* "4,194,304" */
const char *pc_pcli_commas(double v, char *buf, size_t cap);
/* "39.3 GB", "6.34 TB", "461 MB" */
const char *pc_pcli_gb(double bytes, char *buf, size_t cap);

#endif
