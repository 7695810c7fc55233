/* The only file that names driver entry points.
 *
 * X(name, version): `name` is the base symbol handed to cuGetProcAddress,
 * `version` the suffix of its PFN_<name>_v<version> typedef in
 * cudaTypedefs.h — the newest ABI at or below BC_CUDA_ABI_VERSION, which is
 * what cuGetProcAddress returns when asked for that version. Keep the two in
 * step: a wrong pair is a silent ABI mismatch.
 *
 * No #include guard: included once per expansion with X defined.
 */
X(cuDriverGetVersion, 2020)
X(cuInit, 2000)
X(cuGetErrorName, 6000)
X(cuGetErrorString, 6000)
X(cuDeviceGetCount, 2000)
X(cuDeviceGet, 2000)
X(cuDeviceGetName, 2000)
X(cuDeviceGetAttribute, 2000)
X(cuDeviceTotalMem, 3020)
X(cuCtxCreate, 11040)
X(cuCtxDestroy, 4000)
X(cuCtxSetCurrent, 4000)
X(cuCtxGetCurrent, 4000)
X(cuCtxGetStreamPriorityRange, 5050)
X(cuCtxSynchronize, 2000)
X(cuDevicePrimaryCtxRetain, 7000)
X(cuDevicePrimaryCtxRelease, 11000)
X(cuDevicePrimaryCtxGetState, 7000)
X(cuMemAlloc, 3020)
X(cuMemFree, 3020)
X(cuMemHostAlloc, 2020)
X(cuMemHostGetDevicePointer, 3020)
X(cuMemFreeHost, 2000)
X(cuMemHostRegister, 6050)
X(cuMemHostUnregister, 4000)
X(cuMemcpyHtoD, 3020)
X(cuMemcpyDtoH, 3020)
X(cuMemcpyHtoDAsync, 3020)
X(cuMemcpyDtoHAsync, 3020)
X(cuMemsetD8Async, 3020)
X(cuPointerGetAttributes, 7000)
X(cuStreamCreateWithPriority, 5050)
X(cuStreamDestroy, 4000)
X(cuStreamQuery, 2000)
X(cuStreamSynchronize, 2000)
X(cuStreamGetCtx, 9020)
X(cuEventCreate, 2000)
X(cuEventDestroy, 4000)
X(cuEventRecord, 2000)
X(cuEventQuery, 2000)
X(cuEventElapsedTime, 2000)
X(cuModuleLoadDataEx, 2010)
X(cuModuleUnload, 2000)
X(cuModuleGetFunction, 2000)
X(cuFuncSetAttribute, 9000)
X(cuFuncGetAttribute, 2020)
X(cuLaunchKernelEx, 11060)
X(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050)
X(cuTensorMapEncodeTiled, 12000)
X(cuTensorMapReplaceAddress, 12000)
X(cuStreamBeginCapture, 10010)
X(cuStreamEndCapture, 10000)
X(cuGraphInstantiateWithFlags, 11040)
X(cuGraphLaunch, 10000)
X(cuGraphExecDestroy, 10000)
X(cuGraphDestroy, 10000)
X(cuGraphGetNodes, 10000)
X(cuGraphKernelNodeGetParams, 12000)
X(cuGraphExecKernelNodeSetParams, 12000)
X(cuOccupancyMaxActiveClusters, 11070)
X(cuStreamGetCaptureInfo, 11030)

/* Optional entries: XO(name, version) is asked for at its own ABI version
 * `version` (above the 12.0 floor). A driver without it leaves the entry
 * NULL instead of failing bc_device_open; the code that calls it says what
 * happens then. Expansions that do not define XO list them like X. */
#ifndef XO
#define XO(name, ver) X(name, ver)
#define BC__XO_DEFAULTED
#endif
XO(cuFuncGetParamInfo, 12040) /* CUDA 12.4: kernel parameter signatures (kernel plans) */
#ifdef BC__XO_DEFAULTED
#undef XO
#undef BC__XO_DEFAULTED
#endif
