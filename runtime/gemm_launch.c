/* The launch path: one driver call, no allocation, no lock, no validation
 * that plan time could have done. */
#include "gemm_internal.h"

bc_status bc_gemm_launch(const bc_gemm_plan *plan, bc_stream *stream)
{
    CUlaunchConfig lc = plan->launch;
    lc.hStream = stream->handle;
    return BC_CU(cuLaunchKernelEx, &lc, plan->fn, (void **)plan->args, NULL);
}
