/* The one definition every kernel header needs and host C can compile too:
 * the pure integer headers (ring.h, tile_sched.h, sm100_desc.h,
 * sm100_pipe.h) are included by the device C and by host unit tests, so
 * they must not pull in anything that only the NVPTX target knows. */
#ifndef BC_KERNELS_PURE_H
#define BC_KERNELS_PURE_H

#include <stdint.h>

#define BC_DEVICE static inline __attribute__((always_inline))

#endif
