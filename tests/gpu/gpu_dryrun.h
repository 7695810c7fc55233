/* GPU_TEST_PROLOGUE(), first thing in a GPU test's main: nothing in the GPU
 * build; in the dry-run build (-DBC_GPU_TEST_ON_FAKE, a unit test) it
 * installs the fake driver with its kernel models (tests/unit/gpu_on_fake.h). */
#ifndef BC_TESTS_GPU_DRYRUN_H
#define BC_TESTS_GPU_DRYRUN_H

#ifdef BC_GPU_TEST_ON_FAKE
#include "gpu_on_fake.h"
#define GPU_TEST_PROLOGUE() gpu_on_fake_install()
#else
#define GPU_TEST_PROLOGUE() ((void)0)
#endif

#endif
