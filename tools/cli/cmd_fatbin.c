/* placeholder: being written */
#include <stdio.h>

#include "cli.h"

int bc_cmd_fatbin(int argc, char **argv)
{
    fprintf(stderr, "barecuda fatbin: not built yet\n");
    return BC_EXIT_ERROR;
}
