/* barecuda — a minimal C runtime over the CUDA driver API.
 *
 * One include for the whole public API. Link libbarecuda.a with -ldl
 * -lpthread -lm; the NVIDIA driver (libcuda.so.1) is loaded at run time, so
 * nothing CUDA is needed at link time.
 */
#ifndef BARECUDA_H
#define BARECUDA_H

#define BARECUDA_VERSION "0.1.0"

#include "barecuda/status.h"
#include "barecuda/device.h"
#include "barecuda/stream.h"
#include "barecuda/mem.h"
#include "barecuda/gemm.h"
#include "barecuda/module.h"
#include "barecuda/graph.h"
#include "barecuda/tensormap.h"
#include "barecuda/resident.h"
#include "barecuda/selftest.h"

#endif
