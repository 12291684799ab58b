/* perfcast tune: placeholder until the tune module lands. */
#include "cli.h"
int pc_cmd_tune(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return pc_cli_usage_error("tune", "not built yet");
}
