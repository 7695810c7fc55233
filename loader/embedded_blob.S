/* The kernel fatbin, embedded byte for byte into libbarecuda.a, the sm_90a
 * optional-groups cubin (the portable family and the resident kernels,
 * loaded as a second module only when asked for) and the sm_90a stream-K
 * cubin (likewise, a module of its own). Their digests and sizes live in
 * build/gen/fatbin_digest.c, groups_digest.c and sk_digest.c (computed at
 * build time). */
    .section .rodata.bc_fatbin, "a", @progbits
    .balign 64
    .globl bc__fatbin_bytes
    .type bc__fatbin_bytes, @object
bc__fatbin_bytes:
    .incbin "build/kernels.fatbin"
    .globl bc__fatbin_bytes_end
bc__fatbin_bytes_end:
    .size bc__fatbin_bytes, bc__fatbin_bytes_end - bc__fatbin_bytes
    .balign 64
    .globl bc__groups_bytes
    .type bc__groups_bytes, @object
bc__groups_bytes:
    .incbin "build/kernels/sm90a_groups.cubin"
    .globl bc__groups_bytes_end
bc__groups_bytes_end:
    .size bc__groups_bytes, bc__groups_bytes_end - bc__groups_bytes
    .balign 64
    .globl bc__sk_bytes
    .type bc__sk_bytes, @object
bc__sk_bytes:
    .incbin "build/kernels/sm90a_sk.cubin"
    .globl bc__sk_bytes_end
bc__sk_bytes_end:
    .size bc__sk_bytes, bc__sk_bytes_end - bc__sk_bytes
    .section .note.GNU-stack, "", @progbits
