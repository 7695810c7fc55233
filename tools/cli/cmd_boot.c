/* placeholder: being written */
#include <stdio.h>

#include "cli.h"

int bc_cmd_boot(int argc, char **argv)
{
    fprintf(stderr, "barecuda boot: not built yet\n");
    return BC_EXIT_ERROR;
}
