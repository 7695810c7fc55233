/* The kernel fatbin, embedded byte for byte into libbarecuda.a. Its digest
 * and size live in build/gen/fatbin_digest.c (computed at build time). */
    .section .rodata.bc_fatbin, "a", @progbits
    .balign 64
    .globl bc__fatbin_bytes
    .type bc__fatbin_bytes, @object
bc__fatbin_bytes:
    .incbin "build/kernels.fatbin"
    .globl bc__fatbin_bytes_end
bc__fatbin_bytes_end:
    .size bc__fatbin_bytes, bc__fatbin_bytes_end - bc__fatbin_bytes
    .section .note.GNU-stack, "", @progbits
