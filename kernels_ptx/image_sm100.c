/* The Blackwell image (compiled as sm_90a PTX, retargeted to sm_100a,
 * sm_100f, sm_103a and sm_110a by the build). */
#include "smoke.c"
#include "gemm_sm100.c"
