/* placeholder: being written */
#include <stdio.h>

#include "cli.h"

int bc_cmd_info(int argc, char **argv)
{
    fprintf(stderr, "barecuda info: not built yet\n");
    return BC_EXIT_ERROR;
}
