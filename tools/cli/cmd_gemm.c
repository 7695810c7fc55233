/* placeholder: being written */
#include <stdio.h>

#include "cli.h"

int bc_cmd_gemm(int argc, char **argv)
{
    fprintf(stderr, "barecuda gemm: not built yet\n");
    return BC_EXIT_ERROR;
}
