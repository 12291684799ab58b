/* --stage after|before: which modules of an XLA dump directory the HLO commands read. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

int pc_cli_hlo_stage_path(const char *cmd, const char *path, const char *stage, char *buf, size_t cap,
                          const char **out) {
    *out = path;
    if (!stage) return -1;
    if (strcmp(stage, "after") && strcmp(stage, "before"))
        return pc_cli_usage_error(cmd, "--stage expects after or before, got '%s'", stage);
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return pc_cli_usage_error(cmd, "--stage goes with an XLA dump directory; '%s' is not one", path);
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    if ((size_t)snprintf(buf, cap, "%.*s/*%s_optimizations.txt", (int)n, path, stage) >= cap)
        return pc_cli_usage_error(cmd, "path too long: '%s'", path);
    *out = buf;
    return -1;
}
