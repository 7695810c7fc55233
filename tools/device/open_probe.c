/* Where device open's time goes, piece by piece, outside the library: a
 * diagnostic for the boot budget (built and run on the device machine:
 * `cc -O2 -I/usr/local/cuda/include tools/device/open_probe.c -ldl -lpthread
 * -o /tmp/open_probe`, then `/tmp/open_probe MODE CUBIN KERNEL...`, one
 * process per measurement so each sees a fresh context).
 *
 * MODE seq:   device arena, host arena, module load, kernels resolved, one
 *             after another (as bc_device_open does);
 * MODE par:   the two arena allocations on a second thread while this one
 *             loads the module and resolves the kernels;
 * MODE host:N the host arena alone, N bytes (after an 8 MiB device one);
 * MODE reg:N  N bytes of mmap'ed, pre-faulted memory registered instead;
 * MODE regnp:N the same, not pre-faulted (the registration faults it in);
 * MODE regthp:N the same, 2 MiB aligned and advised to huge pages;
 * MODE twice  two 64 KiB host allocations, each timed.
 * Prints one line: each piece's microseconds and the total. */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define LOAD(name) name##_t *p_##name = (name##_t *)dlsym(lib, #name "_v2") ? (name##_t *)dlsym(lib, #name "_v2") : (name##_t *)dlsym(lib, #name)
typedef CUresult cuInit_t(unsigned);
typedef CUresult cuDeviceGet_t(CUdevice *, int);
typedef CUresult cuDevicePrimaryCtxRetain_t(CUcontext *, CUdevice);
typedef CUresult cuCtxSetCurrent_t(CUcontext);
typedef CUresult cuMemAlloc_t(CUdeviceptr *, size_t);
typedef CUresult cuMemHostAlloc_t(void **, size_t, unsigned);
typedef CUresult cuModuleLoadData_t(CUmodule *, const void *);
typedef CUresult cuModuleGetFunction_t(CUfunction *, CUmodule, const char *);
typedef CUresult cuFuncSetAttribute_t(CUfunction, CUfunction_attribute, int);
typedef CUresult cuMemHostRegister_t(void *, size_t, unsigned);

static cuCtxSetCurrent_t *set_cur;
static cuMemAlloc_t *mem_alloc;
static cuMemHostAlloc_t *host_alloc;
static CUcontext ctx;
static size_t host_bytes = 1u << 20;
static double t_dev, t_host;

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static void *arenas(void *arg)
{
    (void)arg;
    CUdeviceptr d;
    void *h;
    set_cur(ctx);
    double t0 = now_us();
    if (mem_alloc(&d, 8u << 20))
        exit(3);
    double t1 = now_us();
    if (host_alloc(&h, host_bytes, CU_MEMHOSTALLOC_DEVICEMAP))
        exit(4);
    t_dev = t1 - t0;
    t_host = now_us() - t1;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib)
        return 5;
    LOAD(cuInit);
    LOAD(cuDeviceGet);
    LOAD(cuDevicePrimaryCtxRetain);
    LOAD(cuCtxSetCurrent);
    LOAD(cuMemAlloc);
    LOAD(cuMemHostAlloc);
    LOAD(cuModuleLoadData);
    LOAD(cuModuleGetFunction);
    LOAD(cuFuncSetAttribute);
    set_cur = p_cuCtxSetCurrent;
    mem_alloc = p_cuMemAlloc;
    host_alloc = p_cuMemHostAlloc;
    CUdevice dev;
    if (p_cuInit(0) || p_cuDeviceGet(&dev, 0) || p_cuDevicePrimaryCtxRetain(&ctx, dev) || set_cur(ctx))
        return 6;
    FILE *f = fopen(argv[2], "rb");
    if (!f)
        return 7;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *img = malloc(n);
    if (fread(img, 1, n, f) != (size_t)n)
        return 8;
    fclose(f);

    const char *mode = argv[1];
    LOAD(cuMemHostRegister);
    if (strncmp(mode, "reg", 3) == 0) {
        int np = strncmp(mode, "regnp:", 6) == 0, thp = strncmp(mode, "regthp:", 7) == 0;
        size_t bytes = strtoull(strchr(mode, ':') + 1, NULL, 0);
        double t0 = now_us();
        char *h;
        if (thp) {
            size_t two = 2u << 20, span = (bytes + two - 1) / two * two;
            char *raw = mmap(NULL, span + two, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (raw == MAP_FAILED)
                return 12;
            h = (char *)(((uintptr_t)raw + two - 1) & ~(uintptr_t)(two - 1));
            madvise(h, span, MADV_HUGEPAGE);
            for (size_t i = 0; i < span; i += 4096)
                h[i] = 0;
            bytes = span;
        } else {
            h = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | (np ? 0 : MAP_POPULATE), -1, 0);
            if (h == MAP_FAILED)
                return 12;
        }
        double t1 = now_us();
        if (p_cuMemHostRegister(h, bytes, CU_MEMHOSTREGISTER_DEVICEMAP))
            return 13;
        double t2 = now_us();
        void *h2 = NULL;
        if (host_alloc(&h2, 65536, CU_MEMHOSTALLOC_DEVICEMAP))
            return 4;
        printf("%s mmap %.0f register %.0f total %.0f (a cuMemHostAlloc after it %.0f)\n", mode, t1 - t0, t2 - t1,
               t2 - t0, now_us() - t2);
        return 0;
    }
    if (strcmp(mode, "twice") == 0) {
        void *h;
        double t0 = now_us();
        if (host_alloc(&h, 65536, CU_MEMHOSTALLOC_DEVICEMAP))
            return 4;
        double t1 = now_us();
        if (host_alloc(&h, 65536, CU_MEMHOSTALLOC_DEVICEMAP))
            return 4;
        printf("%s first %.0f second %.0f\n", mode, t1 - t0, now_us() - t1);
        return 0;
    }
    if (strncmp(mode, "host:", 5) == 0) {
        host_bytes = strtoull(mode + 5, NULL, 0);
        arenas(NULL);
        printf("%s dev %.0f host %.0f\n", mode, t_dev, t_host);
        return 0;
    }
    int par = strcmp(mode, "par") == 0;
    pthread_t th;
    double t0 = now_us();
    if (par)
        pthread_create(&th, NULL, arenas, NULL);
    else
        arenas(NULL);
    double t1 = now_us();
    CUmodule m;
    if (p_cuModuleLoadData(&m, img))
        return 9;
    double t2 = now_us();
    double worst = 0;
    const char *worst_name = "";
    for (int i = 3; i < argc; i++) {
        double a = now_us();
        CUfunction fn;
        if (p_cuModuleGetFunction(&fn, m, argv[i]))
            return 10;
        if (p_cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 1024))
            return 11;
        double b = now_us() - a;
        if (b > worst) {
            worst = b;
            worst_name = argv[i];
        }
    }
    double t3 = now_us();
    if (par)
        pthread_join(th, NULL);
    double t4 = now_us();
    printf("%s dev %.0f host %.0f modload %.0f resolve %.0f (worst %.0f %s) join %.0f total %.0f\n", mode, t_dev,
           t_host, t2 - t1, t3 - t2, worst, worst_name, t4 - t3, t4 - t0);
    return 0;
}
