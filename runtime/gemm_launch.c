/* The launch path: one driver call, no allocation, no lock, no validation
 * that plan time could have done. */
#include "error.h"
#include "gemm_internal.h"

bc_status bc_gemm_launch(const bc_gemm_plan *plan, bc_stream *stream)
{
    if (plan == NULL || stream == NULL)
        return BC_FAIL(BC_ERR_INVALID_ARGUMENT, "bc_gemm_launch", "plan or stream is NULL");
    if (BC_STREAM_ON(stream, plan->dev, "the plan"))
        return BC_ERR_INVALID_ARGUMENT;
    CUlaunchConfig lc = plan->launch;
    lc.hStream = stream->handle;
    return BC_CU(cuLaunchKernelEx, &lc, plan->fn, (void **)plan->args, NULL);
}
