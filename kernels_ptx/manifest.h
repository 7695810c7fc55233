/* The kernels each image must contain: shared by the host (which resolves
 * them at load and refuses an image that lacks one) and the build (which
 * checks the PTX against it).
 *
 * K(id, symbol, family, smem): family ALL is in every image; SM90 only in the
 * sm_90a image; SM100 only in the Blackwell images. smem is the dynamic
 * shared memory the kernel is launched with (bytes; gemm_abi.h), which the
 * loader sets as the kernel's limit.
 *
 * No #include guard: included once per expansion with K defined.
 */
K(SMOKE, bc_smoke_checksum, ALL, 0)
K(SPIN, bc_test_spin, ALL, 0)
