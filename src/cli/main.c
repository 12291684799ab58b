#include <stdio.h>
#include "perfcast/perfcast.h"
int main(void) { printf("perfcast %s\n", pc_version()); return 0; }
