/* The sm_90a image: one translation unit so that all its kernels land in one
 * cubin (the driver loads one image per device). */
#include "smoke.c"
#include "gemm_sm90.c"
#include "resident_sm90.c"
