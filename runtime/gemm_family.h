/* Internal: the GEMM families. Each kernel family (one kernel source, one
 * image or more) brings a table: its configurations with their rule
 * weights and split-K exchange costs, and the devices it serves. The plan's
 * rule (gemm_rule.c) walks these tables and knows no family by name; a new
 * family is a new table here plus its kernel file. */
#ifndef BC_RUNTIME_GEMM_FAMILY_H
#define BC_RUNTIME_GEMM_FAMILY_H

#include "gemm_internal.h"

/* What a family is on a device. */
typedef enum bc__gemm_role {
    BC__ROLE_NONE = 0,  /* not in the device's image */
    BC__ROLE_NAMED = 1, /* in the image; used only when a plan names one of its configurations */
    BC__ROLE_RULE = 2,  /* in the image, and the configuration rule chooses among it */
} bc__gemm_role;

/* A family's role on devices of compute capability major.minor (minor -1:
 * every minor). */
typedef struct bc__gemm_arch {
    int major, minor;
    bc__gemm_role role;
} bc__gemm_arch;

typedef struct bc__gemm_family {
    const char *name;                /* for messages: "sm_90a wgmma" */
    const bc__gemm_config *configs;  /* the rule's order: ties go to the earlier */
    size_t count;
    const bc__gemm_arch *archs;
    size_t arch_count;
} bc__gemm_family;

extern const bc__gemm_family bc__gemm_family_sm90;  /* gemm_family_sm90.c */
extern const bc__gemm_family bc__gemm_family_sm100; /* gemm_family_sm100.c */
extern const bc__gemm_family bc__gemm_family_sm80;  /* gemm_family_sm80.c */
extern const bc__gemm_family bc__gemm_family_sm80_sm90a; /* the same kernels in the sm_90a image */

#endif
