/* Pieces of the commands' --json output (docs/json.md) shared between commands. */
#include <cjson/cJSON.h>
#include <stdlib.h>

#include "cli.h"

int pc_cli_json_print(struct cJSON *o) {
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!s) {
        fprintf(stderr, "perfcast: error: out of memory\n");
        return PC_EXIT_FAIL;
    }
    printf("%s\n", s);
    free(s);
    pc_cli_json_printed();
    return PC_EXIT_OK;
}

struct cJSON *pc_cli_json_dataset(const char *root) {
    pc_error e;
    pc_dataset *d;
    cJSON *arr = cJSON_CreateArray();
    if (pc_dataset_open(root, &d, &e) != PC_OK) return arr;
    for (int c = 0; c < PC_NUM_COLLECTIONS; c++) {
        size_t total = 0;
        for (int s = 0; s < PC_NUM_SPLITS; s++) total += pc_dataset_num_files(d, c, s);
        if (!total) continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "collection", pc_collection_name(c));
        for (int s = 0; s < PC_NUM_SPLITS; s++)
            cJSON_AddNumberToObject(o, pc_split_name(s), (double)pc_dataset_num_files(d, c, s));
        cJSON_AddItemToArray(arr, o);
    }
    pc_dataset_close(d);
    return arr;
}
