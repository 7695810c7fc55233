/* placeholder: being written */
typedef int bc__placeholder_gemm_launch;
