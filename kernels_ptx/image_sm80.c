/* The portable image (sm_80 PTX, assembled for sm_80 and sm_120 by the
 * build): the boot-check kernels and the mma.sync GEMM. */
#include "smoke.c"
#include "gemm_sm80.c"
