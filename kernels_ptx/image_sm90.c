/* The sm_90a image: one translation unit so that all its kernels land in one
 * cubin (the driver loads one image per device). The portable kernels ride
 * along so that the H100 runs them when a plan names one (config "sm80_*"),
 * there launched with programmatic serialization like the wgmma kernels. */
#include "smoke.c"
#include "gemm_sm90.c"
#include "gemm_sm90_kernels.c"
#include "gemm_dot.c"
#include "gemm_gemv.c"
#define BC_SM80_PDL 1 /* griddepcontrol exists from sm_90 on */
#include "gemm_sm80.c"
#include "resident_sm90.c"
