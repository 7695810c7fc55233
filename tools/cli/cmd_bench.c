/* placeholder: being written */
#include <stdio.h>

#include "cli.h"

int bc_cmd_bench(int argc, char **argv)
{
    fprintf(stderr, "barecuda bench: not built yet\n");
    return BC_EXIT_ERROR;
}
