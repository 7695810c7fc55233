/* placeholder: being written */
#include <stdio.h>

#include "cli.h"

int bc_cmd_latency(int argc, char **argv)
{
    fprintf(stderr, "barecuda latency: not built yet\n");
    return BC_EXIT_ERROR;
}
