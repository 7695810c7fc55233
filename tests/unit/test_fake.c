/* The fake driver's own models, driven through its table directly: what
 * the other unit tests rely on when they read its records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fake_test.h"

static const bc__driver *T;

/* cuInit + an own context, current on this thread. */
static CUcontext start(void)
{
    T = fake_table();
    CUcontext c = NULL;
    assert_int_equal(T->cuInit(0), CUDA_SUCCESS);
    assert_int_equal(T->cuCtxCreate(&c, NULL, 0, CU_CTX_SCHED_SPIN, 0), CUDA_SUCCESS);
    return c;
}

static const char ptx[] = ".version 8.0\n.target sm_90a\n.visible .entry k_main(\n.param .u64 p)\n{ ret; }\n"
                          ".visible .entry k_other( )\n{ ret; }\n";

static void test_contexts(void **state)
{
    CUcontext c = start();
    assert_ptr_equal(fake_current_context(), c);
    CUcontext got = NULL;
    assert_int_equal(T->cuCtxGetCurrent(&got), CUDA_SUCCESS);
    assert_ptr_equal(got, c);
    int least = 9, greatest = 9;
    assert_int_equal(T->cuCtxGetStreamPriorityRange(&least, &greatest), CUDA_SUCCESS);
    assert_int_equal(least, 0);
    assert_int_equal(greatest, -5);
    assert_int_equal(T->cuCtxDestroy(c), CUDA_SUCCESS);
    assert_null(fake_current_context());
    assert_int_equal(T->cuCtxSetCurrent(c), CUDA_ERROR_INVALID_CONTEXT);
    assert_int_equal(T->cuCtxDestroy(c), CUDA_ERROR_INVALID_CONTEXT);
    assert_int_equal(T->cuCtxGetStreamPriorityRange(&least, &greatest), CUDA_ERROR_INVALID_CONTEXT);
    assert_int_equal(T->cuDevicePrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT);
    assert_int_equal(T->cuCtxCreate(&c, NULL, 0, 3, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(T->cuCtxCreate(&c, NULL, 0, 0, 1), CUDA_ERROR_INVALID_DEVICE);
    CUdevice d = -1;
    assert_int_equal(T->cuDeviceGet(&d, 1), CUDA_ERROR_INVALID_DEVICE);
    int v = 0;
    assert_int_equal(T->cuDeviceGetAttribute(&v, (CUdevice_attribute)CU_DEVICE_ATTRIBUTE_MAX, 0),
                     CUDA_ERROR_INVALID_VALUE);
    fake_set_device_attr(0, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, 0);
    assert_int_equal(T->cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, 0), CUDA_SUCCESS);
    assert_int_equal(v, 0);
    assert_int_equal(T->cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0), CUDA_SUCCESS);
    assert_int_equal(v, 32);
}

static void test_memory(void **state)
{
    CUdeviceptr p = 0;
    T = fake_table();
    assert_int_equal(T->cuInit(0), CUDA_SUCCESS);
    assert_int_equal(T->cuMemAlloc(&p, 64), CUDA_ERROR_INVALID_CONTEXT); /* no context yet */
    CUcontext c = start();
    assert_int_equal(T->cuMemAlloc(&p, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(T->cuMemAlloc(&p, 1000), CUDA_SUCCESS);
    assert_int_equal(p % 512, 0);
    assert_true(fake_alloc_size(p) == 1000);
    char buf[1000];
    memset(buf, 7, sizeof buf);
    assert_int_equal(T->cuMemcpyHtoD(p + 900, buf, 100), CUDA_SUCCESS);
    assert_int_equal(T->cuMemcpyHtoD(p + 900, buf, 101), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(T->cuMemcpyDtoH(buf, p + 1, 999), CUDA_SUCCESS);
    assert_int_equal(T->cuMemFree(p + 1), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(T->cuMemFree(p), CUDA_SUCCESS);
    assert_int_equal(T->cuMemFree(p), CUDA_ERROR_INVALID_VALUE);

    fake_set_mem_limit(4096, 8192);
    assert_int_equal(T->cuMemAlloc(&p, 4097), CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(T->cuMemAlloc(&p, 4096), CUDA_SUCCESS);
    CUdeviceptr q = 0;
    assert_int_equal(T->cuMemAlloc(&q, 1), CUDA_ERROR_OUT_OF_MEMORY);
    void *h = NULL;
    assert_int_equal(T->cuMemHostAlloc(&h, 8193, 0), CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(T->cuMemHostAlloc(&h, 100, 0x80), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(T->cuMemHostAlloc(&h, 8192, CU_MEMHOSTALLOC_DEVICEMAP), CUDA_SUCCESS);
    assert_true(fake_host_bytes_live() == 8192);
    assert_int_equal(T->cuMemFreeHost(buf), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(T->cuMemFreeHost(h), CUDA_SUCCESS);
    assert_int_equal(T->cuMemFree(p), CUDA_SUCCESS);
    assert_int_equal(T->cuCtxDestroy(c), CUDA_SUCCESS);
}

static void test_streams_events(void **state)
{
    CUcontext c = start();
    CUstream s = NULL;
    assert_int_equal(T->cuStreamCreateWithPriority(&s, 2, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(T->cuStreamCreateWithPriority(&s, 0, -99), CUDA_SUCCESS);
    fake_stream_info si;
    assert_true(fake_stream_query(s, &si));
    assert_int_equal(si.priority, -5); /* the driver clamps too */
    fake_set_busy(2);
    assert_int_equal(T->cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    assert_int_equal(T->cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    assert_int_equal(T->cuStreamQuery(s), CUDA_SUCCESS);
    fake_set_busy(FAKE_BUSY_FOREVER);
    assert_int_equal(T->cuStreamSynchronize(s), CUDA_ERROR_LAUNCH_TIMEOUT);
    fake_set_busy(5);
    assert_int_equal(T->cuStreamSynchronize(s), CUDA_SUCCESS);
    assert_int_equal(T->cuStreamQuery(s), CUDA_SUCCESS);
    assert_int_equal(T->cuStreamQuery((CUstream)(uintptr_t)0x1234), CUDA_ERROR_INVALID_HANDLE);

    CUevent a = NULL, b = NULL, nt = NULL;
    assert_int_equal(T->cuEventCreate(&a, 0), CUDA_SUCCESS);
    assert_int_equal(T->cuEventCreate(&b, 0), CUDA_SUCCESS);
    assert_int_equal(T->cuEventCreate(&nt, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
    float ms = 0;
    assert_int_equal(T->cuEventQuery(a), CUDA_SUCCESS); /* never recorded: complete */
    assert_int_equal(T->cuEventElapsedTime(&ms, a, b), CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(T->cuEventRecord(a, s), CUDA_SUCCESS);
    assert_int_equal(T->cuEventRecord(b, NULL), CUDA_SUCCESS);
    assert_int_equal(T->cuEventRecord(nt, s), CUDA_SUCCESS);
    assert_int_equal(T->cuEventElapsedTime(&ms, a, b), CUDA_SUCCESS);
    assert_true(ms == 1.5f);
    assert_int_equal(T->cuEventElapsedTime(&ms, b, a), CUDA_SUCCESS);
    assert_true(ms == -1.5f);
    assert_int_equal(T->cuEventElapsedTime(&ms, a, nt), CUDA_ERROR_INVALID_HANDLE);
    fake_set_busy(FAKE_BUSY_FOREVER);
    assert_int_equal(T->cuEventQuery(a), CUDA_ERROR_NOT_READY);
    assert_int_equal(T->cuEventElapsedTime(&ms, a, b), CUDA_ERROR_NOT_READY);
    fake_set_busy(0);

    /* a stream of another context cannot take work from this one */
    CUcontext c2 = NULL;
    assert_int_equal(T->cuCtxCreate(&c2, NULL, 0, 0, 0), CUDA_SUCCESS);
    assert_int_equal(T->cuEventRecord(a, s), CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(T->cuStreamQuery(s), CUDA_SUCCESS); /* queries work from anywhere */
    assert_int_equal(T->cuCtxDestroy(c2), CUDA_SUCCESS);

    fake_live_counts lc;
    fake_live(&lc);
    assert_int_equal(lc.streams, 1);
    assert_int_equal(lc.events, 3);
    assert_int_equal(T->cuEventDestroy(a), CUDA_SUCCESS);
    assert_int_equal(T->cuEventDestroy(b), CUDA_SUCCESS);
    assert_int_equal(T->cuEventDestroy(nt), CUDA_SUCCESS);
    assert_int_equal(T->cuEventDestroy(nt), CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(T->cuStreamDestroy(s), CUDA_SUCCESS);
    assert_int_equal(T->cuCtxDestroy(c), CUDA_SUCCESS);
}

/* A minimal ELF64: header, a string table holding "\0elf_kernel\0", two
 * section headers at the end. */
static size_t make_elf(unsigned char *b)
{
    memset(b, 0, 208);
    memcpy(b, "\x7f" "ELF\x02\x01\x01", 7);
    b[0x3a] = 64; /* e_shentsize */
    b[0x3c] = 2;  /* e_shnum */
    b[0x28] = 80; /* e_shoff */
    memcpy(b + 64, "\0elf_kernel\0", 12);
    unsigned char *sh = b + 80 + 64; /* section 1: SHT_STRTAB at 64, 12 bytes */
    sh[4] = 3;
    sh[0x18] = 64;
    sh[0x20] = 12;
    return 208;
}

static void test_modules(void **state)
{
    CUcontext c = start();
    CUmodule m = NULL;
    CUfunction f = NULL;

    /* PTX text: kernels named after .entry */
    assert_int_equal(T->cuModuleLoadDataEx(&m, ptx, 0, NULL, NULL), CUDA_SUCCESS);
    assert_true(fake_last_module()->size == sizeof ptx);
    assert_int_equal(T->cuModuleGetFunction(&f, m, "k_main"), CUDA_SUCCESS);
    assert_string_equal(fake_function_name(f), "k_main");
    CUfunction f2 = NULL;
    assert_int_equal(T->cuModuleGetFunction(&f2, m, "k_main"), CUDA_SUCCESS);
    assert_ptr_equal(f, f2);
    assert_int_equal(T->cuModuleGetFunction(&f2, m, "k_other"), CUDA_SUCCESS);
    assert_int_equal(T->cuModuleGetFunction(&f2, m, "k_"), CUDA_ERROR_NOT_FOUND);
    assert_int_equal(T->cuModuleGetFunction(&f2, m, "version"), CUDA_ERROR_NOT_FOUND);

    int v = 0;
    assert_int_equal(T->cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f),
                     CUDA_SUCCESS);
    assert_int_equal(v, 49152);
    assert_int_equal(T->cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 232448),
                     CUDA_SUCCESS);
    assert_int_equal(T->cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 232449),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(T->cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NUM_REGS, 1), CUDA_ERROR_INVALID_VALUE);
    assert_true(fake_function_attr(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, &v));
    assert_int_equal(v, 232448);
    assert_int_equal(T->cuModuleUnload(m), CUDA_SUCCESS);
    assert_null(fake_function_name(f));
    assert_int_equal(T->cuModuleUnload(m), CUDA_ERROR_INVALID_HANDLE);

    /* ELF: names are NUL-terminated strings; the size comes from the headers */
    unsigned char elf[208];
    size_t n = make_elf(elf);
    fake_set_kernel_attr("elf_kernel", CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, 64);
    assert_int_equal(T->cuModuleLoadDataEx(&m, elf, 0, NULL, NULL), CUDA_SUCCESS);
    assert_true(fake_last_module()->size == n);
    assert_int_equal(T->cuModuleGetFunction(&f, m, "elf_kernel"), CUDA_SUCCESS);
    assert_int_equal(T->cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f), CUDA_SUCCESS);
    assert_int_equal(v, 64);
    assert_int_equal(T->cuModuleGetFunction(&f, m, "elf_kern"), CUDA_ERROR_NOT_FOUND);
    assert_int_equal(T->cuModuleUnload(m), CUDA_SUCCESS);

    /* arbitrary bytes with a size given */
    static const unsigned char raw[] = {'x', 0, 'r', 'a', 'w', '_', 'k', 0, 0xff};
    fake_set_next_image_size(sizeof raw);
    assert_int_equal(T->cuModuleLoadDataEx(&m, raw, 0, NULL, NULL), CUDA_SUCCESS);
    assert_int_equal(T->cuModuleGetFunction(&f, m, "raw_k"), CUDA_SUCCESS);
    assert_int_equal(T->cuModuleUnload(m), CUDA_SUCCESS);

    /* a refused image: the error log lands in the caller's buffer, truncated */
    char log[8], info[64] = "";
    CUjit_option opts[4] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
    void *vals[4] = {log, (void *)(uintptr_t)sizeof log, info, (void *)(uintptr_t)sizeof info};
    fake_module_fail_next(CUDA_ERROR_NO_BINARY_FOR_GPU, "ptxas fatal: no sm_90a");
    m = NULL;
    assert_int_equal(T->cuModuleLoadDataEx(&m, ptx, 4, opts, vals), CUDA_ERROR_NO_BINARY_FOR_GPU);
    assert_null(m);
    assert_string_equal(log, "ptxas f");
    assert_int_equal((uintptr_t)vals[1], 8);
    assert_int_equal(fake_last_module()->result, CUDA_ERROR_NO_BINARY_FOR_GPU);
    assert_int_equal(fake_last_module()->num_options, 4);
    /* the next one loads, with an info log */
    vals[3] = (void *)(uintptr_t)sizeof info;
    assert_int_equal(T->cuModuleLoadDataEx(&m, ptx, 4, opts, vals), CUDA_SUCCESS);
    assert_non_null(strstr(info, "fake driver"));
    assert_int_equal(T->cuModuleUnload(m), CUDA_SUCCESS);
    assert_int_equal(T->cuCtxDestroy(c), CUDA_SUCCESS);
}

typedef struct params {
    uint64_t a, b;
} params;

static CUresult launch(CUfunction f, CUstream s, unsigned gx, unsigned bx, unsigned smem,
                       unsigned cx, params *p)
{
    CUlaunchAttribute at;
    memset(&at, 0, sizeof at);
    at.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    at.value.clusterDim.x = cx;
    at.value.clusterDim.y = 1;
    at.value.clusterDim.z = 1;
    CUlaunchConfig cfg = {gx, 2, 1, bx, 1, 1, smem, s, &at, 1};
    void *args[] = {p};
    return T->cuLaunchKernelEx(&cfg, f, args, NULL);
}

static void test_launches(void **state)
{
    CUcontext c = start();
    CUmodule m = NULL;
    CUfunction f = NULL;
    CUstream s = NULL;
    assert_int_equal(T->cuModuleLoadDataEx(&m, ptx, 0, NULL, NULL), CUDA_SUCCESS);
    assert_int_equal(T->cuModuleGetFunction(&f, m, "k_main"), CUDA_SUCCESS);
    assert_int_equal(T->cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, 0), CUDA_SUCCESS);
    assert_int_equal(T->cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 200000),
                     CUDA_SUCCESS);
    fake_set_param_size(sizeof(params));
    params p = {0x1111, 0x2222};
    assert_int_equal(launch(f, s, 4, 384, 200000, 2, &p), CUDA_SUCCESS);
    const fake_launch *L = fake_last_launch();
    assert_ptr_equal(L->func, f);
    assert_string_equal(L->kernel, "k_main");
    assert_int_equal(L->grid[0], 4);
    assert_int_equal(L->grid[1], 2);
    assert_int_equal(L->block[0], 384);
    assert_int_equal(L->smem, 200000);
    assert_ptr_equal(L->stream, s);
    assert_int_equal(L->cluster[0], 2);
    assert_int_equal(L->num_attrs, 1);
    assert_int_equal(L->param_bytes, sizeof p);
    assert_memory_equal(L->params, &p, sizeof p);
    assert_false(L->captured);
    assert_int_equal(fake_launches(), 1);

    assert_int_equal(launch(f, s, 4, 384, 200001, 2, &p), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(launch(f, s, 5, 384, 0, 2, &p), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(launch(f, s, 16, 384, 0, 16, &p), CUDA_ERROR_INVALID_CLUSTER_SIZE);
    assert_int_equal(launch(f, s, 4, 2048, 0, 1, &p), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(launch(f, s, 0, 32, 0, 1, &p), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(launch((CUfunction)(uintptr_t)0x99, s, 1, 32, 0, 1, &p), CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(fake_launches(), 1);

    assert_int_equal(T->cuStreamDestroy(s), CUDA_SUCCESS);
    assert_int_equal(T->cuModuleUnload(m), CUDA_SUCCESS);
    assert_int_equal(T->cuCtxDestroy(c), CUDA_SUCCESS);
    assert_int_equal(launch(f, NULL, 1, 32, 0, 1, &p), CUDA_ERROR_INVALID_HANDLE);
}

static void test_tensor_maps(void **state)
{
    T = fake_table();
    assert_int_equal(T->cuInit(0), CUDA_SUCCESS);
    CUtensorMap map;
    uint64_t w[16];
    void *addr = (void *)(uintptr_t)0x7f0000001000ull;
    cuuint64_t gdim[2] = {256, 128}, gstr[1] = {512};
    cuuint32_t box[2] = {64, 128}, es[2] = {1, 1};
#define ENCODE(rank, a, sw)                                                                      \
    T->cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, rank, a, gdim, gstr, box, es, \
                              CU_TENSOR_MAP_INTERLEAVE_NONE, sw, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, \
                              CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    assert_int_equal(ENCODE(2, addr, CU_TENSOR_MAP_SWIZZLE_128B), CUDA_SUCCESS);
    memcpy(w, &map, sizeof w);
    assert_true(w[0] == (uint64_t)(uintptr_t)addr);
    assert_true(w[1] == FAKE_TMAP_MAGIC);
    assert_true(w[3] == 256 && w[4] == 128 && w[8] == 512);
    const fake_tensor_map_args *a = fake_last_tensor_map();
    assert_int_equal(a->rank, 2);
    assert_int_equal(a->dtype, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
    assert_ptr_equal(a->global_address, addr);
    assert_true(a->global_dim[1] == 128 && a->global_strides[0] == 512);
    assert_int_equal(a->box_dim[0], 64);
    assert_int_equal(a->swizzle, CU_TENSOR_MAP_SWIZZLE_128B);
    assert_int_equal(a->l2_promotion, CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
    assert_int_equal(a->result, CUDA_SUCCESS);

    /* the documented violations */
    assert_int_equal(ENCODE(0, addr, CU_TENSOR_MAP_SWIZZLE_128B), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(ENCODE(6, addr, CU_TENSOR_MAP_SWIZZLE_128B), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(ENCODE(2, (char *)addr + 8, CU_TENSOR_MAP_SWIZZLE_128B), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(ENCODE(2, addr, CU_TENSOR_MAP_SWIZZLE_64B), CUDA_ERROR_INVALID_VALUE); /* 128 B inner */
    assert_int_equal(fake_last_tensor_map()->result, CUDA_ERROR_INVALID_VALUE);
    gstr[0] = 520;
    assert_int_equal(ENCODE(2, addr, CU_TENSOR_MAP_SWIZZLE_128B), CUDA_ERROR_INVALID_VALUE);
    gstr[0] = 512;
    box[1] = 257;
    assert_int_equal(ENCODE(2, addr, CU_TENSOR_MAP_SWIZZLE_128B), CUDA_ERROR_INVALID_VALUE);
    box[1] = 128;
    box[0] = 4; /* 8 bytes: not a multiple of 16 */
    assert_int_equal(ENCODE(2, addr, CU_TENSOR_MAP_SWIZZLE_NONE), CUDA_ERROR_INVALID_VALUE);
    box[0] = 64;
    es[1] = 9;
    assert_int_equal(ENCODE(2, addr, CU_TENSOR_MAP_SWIZZLE_128B), CUDA_ERROR_INVALID_VALUE);
    es[1] = 1;
    gdim[0] = 0;
    assert_int_equal(ENCODE(2, addr, CU_TENSOR_MAP_SWIZZLE_128B), CUDA_ERROR_INVALID_VALUE);
    gdim[0] = 256;
    assert_int_equal(ENCODE(2, addr, CU_TENSOR_MAP_SWIZZLE_128B), CUDA_SUCCESS);
#undef ENCODE

    void *moved = (void *)(uintptr_t)0x7f0000002000ull;
    assert_int_equal(T->cuTensorMapReplaceAddress(&map, moved), CUDA_SUCCESS);
    memcpy(w, &map, sizeof w);
    assert_true(w[0] == (uint64_t)(uintptr_t)moved);
    assert_int_equal(fake_tensor_map_replaces(), 1);
    assert_int_equal(T->cuTensorMapReplaceAddress(&map, (char *)moved + 4), CUDA_ERROR_INVALID_VALUE);
    CUtensorMap blank;
    memset(&blank, 0, sizeof blank);
    assert_int_equal(T->cuTensorMapReplaceAddress(&blank, moved), CUDA_ERROR_INVALID_VALUE);
}

static void test_graphs(void **state)
{
    CUcontext c = start();
    CUmodule m = NULL;
    CUfunction f = NULL;
    CUstream s = NULL;
    CUdeviceptr d = 0;
    assert_int_equal(T->cuModuleLoadDataEx(&m, ptx, 0, NULL, NULL), CUDA_SUCCESS);
    assert_int_equal(T->cuModuleGetFunction(&f, m, "k_main"), CUDA_SUCCESS);
    assert_int_equal(T->cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, 0), CUDA_SUCCESS);
    assert_int_equal(T->cuMemAlloc(&d, 64), CUDA_SUCCESS);
    memset((void *)(uintptr_t)d, 0, 64);
    fake_set_param_size(sizeof(params));

    assert_int_equal(T->cuStreamBeginCapture(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL),
                     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_int_equal(T->cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    assert_int_equal(T->cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_ERROR_ILLEGAL_STATE);
    params p1 = {1, 2}, p2 = {3, 4};
    assert_int_equal(launch(f, s, 2, 128, 0, 1, &p1), CUDA_SUCCESS);
    assert_true(fake_last_launch()->captured);
    assert_int_equal(T->cuMemsetD8Async(d, 0xee, 64, s), CUDA_SUCCESS);
    assert_int_equal(((unsigned char *)(uintptr_t)d)[0], 0); /* captured, not done */
    assert_int_equal(launch(f, s, 4, 128, 0, 1, &p2), CUDA_SUCCESS);
    assert_int_equal(fake_launches(), 0);
    CUgraph g = NULL;
    assert_int_equal(T->cuStreamEndCapture(s, &g), CUDA_SUCCESS);
    assert_true(fake_graph_node_count(g) == 3);

    size_t n = 0;
    assert_int_equal(T->cuGraphGetNodes(g, NULL, &n), CUDA_SUCCESS);
    assert_true(n == 3);
    CUgraphNode nodes[4];
    n = 4;
    assert_int_equal(T->cuGraphGetNodes(g, nodes, &n), CUDA_SUCCESS);
    assert_true(n == 3);
    assert_null(nodes[3]);
    CUDA_KERNEL_NODE_PARAMS_v2 kp;
    assert_int_equal(T->cuGraphKernelNodeGetParams(nodes[2], &kp), CUDA_SUCCESS);
    assert_ptr_equal(kp.func, f);
    assert_int_equal(kp.gridDimX, 4);
    assert_memory_equal(kp.kernelParams[0], &p2, sizeof p2);
    assert_int_equal(T->cuGraphKernelNodeGetParams(nodes[1], &kp), CUDA_ERROR_INVALID_VALUE);

    CUgraphExec e = NULL;
    assert_int_equal(T->cuGraphInstantiateWithFlags(&e, g, 0), CUDA_SUCCESS);
    assert_int_equal(T->cuGraphLaunch(e, s), CUDA_SUCCESS);
    assert_int_equal(fake_graph_launches(), 1);
    assert_int_equal(fake_graph_kernels_run(), 2);

    params p3 = {5, 6};
    assert_int_equal(T->cuGraphKernelNodeGetParams(nodes[0], &kp), CUDA_SUCCESS);
    void *args[] = {&p3};
    kp.kernelParams = args;
    assert_int_equal(T->cuGraphExecKernelNodeSetParams(e, nodes[0], &kp), CUDA_SUCCESS);
    assert_int_equal(fake_exec_updates(), 1);
    assert_memory_equal(fake_last_exec_update()->params, &p3, sizeof p3);
    assert_int_equal(fake_last_exec_update()->grid[0], 2);
    assert_int_equal(T->cuGraphExecKernelNodeSetParams(e, nodes[1], &kp), CUDA_ERROR_INVALID_VALUE);

    /* a synchronising call while capturing invalidates the capture */
    assert_int_equal(T->cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    assert_int_equal(T->cuStreamQuery(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUgraph bad = (CUgraph)(uintptr_t)1;
    assert_int_equal(T->cuStreamEndCapture(s, &bad), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_null(bad);
    assert_int_equal(T->cuStreamEndCapture(s, &bad), CUDA_ERROR_ILLEGAL_STATE);

    fake_live_counts lc;
    fake_live(&lc);
    assert_int_equal(lc.graphs, 1);
    assert_int_equal(lc.graph_execs, 1);
    assert_int_equal(T->cuGraphDestroy(g), CUDA_SUCCESS);
    /* the exec outlives its graph; its nodes' handles do not */
    assert_int_equal(T->cuGraphLaunch(e, s), CUDA_SUCCESS);
    assert_int_equal(T->cuGraphExecKernelNodeSetParams(e, nodes[0], &kp), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(T->cuGraphExecDestroy(e), CUDA_SUCCESS);
    assert_int_equal(T->cuGraphExecDestroy(e), CUDA_ERROR_INVALID_VALUE);

    /* a stream destroyed mid-capture takes its graph along */
    assert_int_equal(T->cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    fake_live(&lc);
    assert_int_equal(lc.graphs, 1);
    assert_int_equal(T->cuStreamDestroy(s), CUDA_SUCCESS);
    fake_live(&lc);
    assert_int_equal(lc.graphs, 0);

    assert_int_equal(T->cuMemFree(d), CUDA_SUCCESS);
    assert_int_equal(T->cuModuleUnload(m), CUDA_SUCCESS);
    assert_int_equal(T->cuCtxDestroy(c), CUDA_SUCCESS);
}

/* fake_reset frees whatever a test left behind. */
static void test_reset_frees_everything(void **state)
{
    start();
    CUdeviceptr d = 0;
    CUstream s = NULL;
    CUmodule m = NULL;
    assert_int_equal(T->cuMemAlloc(&d, 4096), CUDA_SUCCESS);
    assert_int_equal(T->cuStreamCreateWithPriority(&s, 0, 0), CUDA_SUCCESS);
    assert_int_equal(T->cuModuleLoadDataEx(&m, ptx, 0, NULL, NULL), CUDA_SUCCESS);
    assert_int_equal(T->cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    assert_int_equal(fake_live_objects(), 5);
    assert_string_equal(fake_live_string(), "contexts=1 allocations=1 streams=1 modules=1 graphs=1");
    fake_reset();
    assert_int_equal(fake_live_objects(), 0);
    assert_string_equal(fake_live_string(), "none");
    assert_int_equal(fake_calls(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ft_test(test_contexts),    ft_test(test_memory),      ft_test(test_streams_events),
        ft_test(test_modules),     ft_test(test_launches),    ft_test(test_tensor_maps),
        ft_test(test_graphs),      ft_test(test_reset_frees_everything),
    };
    return cmocka_run_group_tests_name("fake", tests, NULL, NULL);
}
