/*
 * driver.c - the CUDA driver, opened with dlopen on first use.
 *
 * One process-wide `driver` record holds the loaded library, the resolved
 * entry points, device 0 and its primary context (the context CuPy, PyTorch
 * and Numba use, so memory can be shared with them).  A failure to load or
 * initialise is remembered with its reason, and every later call raises
 * CudaSupportError with that reason: nothing retries cuInit on every call.
 * The primary context stays retained until the process ends (the driver
 * releases it then); releasing it earlier would invalidate memory that live
 * arrays still own.
 */
#include "targets/cuda/driver/driver.h"

#include <dlfcn.h>
#include <string.h>

static struct {
    int tried;
    void *handle;
    CudaDriver api;
    CUdevice device;
    CUcontext context;
    CUmemoryPool pool; /* ours (see load), or NULL: the device's current pool */
    char error[512];   /* why it is unavailable */
} driver;

const CudaDriver *cuda_drv = NULL;

static void
unavailable(const char *fmt, const char *detail)
{
    snprintf(driver.error, sizeof(driver.error), fmt, detail);
}

/* Names of the errors met before the driver can name them itself. */
static const struct {
    CUresult rc;
    const char *name, *text;
} known_errors[] = {
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
};

/* The driver's name and text for rc, or ours for the errors met before the
 * driver can name them. */
static void
describe(CUresult rc, const char **name, const char **text)
{
    *name = *text = NULL;
    if (driver.api.GetErrorName != NULL) {
        driver.api.GetErrorName(rc, name);
        driver.api.GetErrorString(rc, text);
    }
    for (size_t i = 0; i < sizeof(known_errors) / sizeof(known_errors[0]); i++) {
        if (known_errors[i].rc == rc) {
            *name = *name ? *name : known_errors[i].name;
            *text = *text ? *text : known_errors[i].text;
        }
    }
    *name = *name ? *name : "CUDA_ERROR_UNKNOWN";
    *text = *text ? *text : "unknown error";
}

static int
resolve(void *h)
{
#define CUDA_RESOLVE(field, symbol, params)                                                        \
    if ((*(void **)&driver.api.field = dlsym(h, symbol)) == NULL) {                                \
        unavailable("libcuda.so.1 lacks %s (a driver older than CUDA 11.2?)", symbol);             \
        return -1;                                                                                 \
    }
    CUDA_DRIVER_ENTRY_POINTS(CUDA_RESOLVE)
#undef CUDA_RESOLVE
    return 0;
}

static void
init_failed(const char *what, CUresult rc)
{
    char detail[400];
    const char *name, *text;
    describe(rc, &name, &text);
    snprintf(detail, sizeof(detail), "%s failed: %s: %s", what, name, text);
    unavailable("the CUDA driver is installed but unusable: %s", detail);
}

/* Loads and initialises once; 0/-1 (no exception: the reason is kept). */
static int
load(void)
{
    if (driver.tried) {
        return cuda_drv != NULL ? 0 : -1;
    }
    driver.tried = 1;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        unavailable("no CUDA driver: libcuda.so.1 cannot be loaded (%s); install the NVIDIA "
                    "driver on a machine with an NVIDIA GPU",
                    dlerror());
        return -1;
    }
    if (resolve(h) < 0) {
        dlclose(h);
        return -1;
    }
    driver.handle = h;
    CUresult rc;
    int count = 0;
    if ((rc = driver.api.Init(0)) != CUDA_SUCCESS) {
        init_failed("cuInit", rc);
        return -1;
    }
    if ((rc = driver.api.DeviceGetCount(&count)) != CUDA_SUCCESS || count == 0) {
        unavailable("%s", "no CUDA device: the driver is loaded but reports no GPU");
        return -1;
    }
    if ((rc = driver.api.DeviceGet(&driver.device, 0)) != CUDA_SUCCESS) {
        init_failed("cuDeviceGet", rc);
        return -1;
    }
    if ((rc = driver.api.DevicePrimaryCtxRetain(&driver.context, driver.device)) != CUDA_SUCCESS) {
        init_failed("cuDevicePrimaryCtxRetain", rc);
        return -1;
    }
    /* Our own pool, which keeps what cuMemFreeAsync releases for the next
     * allocation (a pool's default threshold of 0 hands it back to the
     * system at every synchronisation, and the next call pays for it
     * again).  Our own, so that other libraries' pools keep their settings;
     * without one, allocations come from the device's current pool. */
    int pools = 0;
    unsigned long long keep = ~0ULL;
    CUmemPoolProps props;
    memset(&props, 0, sizeof(props));
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = driver.device;
    if (driver.api.DeviceGetAttribute(&pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
                                      driver.device)
            != CUDA_SUCCESS
        || !pools || driver.api.MemPoolCreate(&driver.pool, &props) != CUDA_SUCCESS) {
        driver.pool = NULL;
    } else {
        driver.api.MemPoolSetAttribute(driver.pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
    }
    cuda_drv = &driver.api;
    return 0;
}

CUresult
cuda_mem_alloc(CUdeviceptr *p, size_t bytes, CUstream s, int *async)
{
    CUresult rc = CUDA_ERROR_NOT_SUPPORTED;
    *async = 1;
    if (driver.pool != NULL) {
        rc = cuda_drv->MemAllocFromPoolAsync(p, bytes, driver.pool, s);
        if (rc == CUDA_ERROR_OUT_OF_MEMORY) {
            cuda_mem_trim();
            rc = cuda_drv->MemAllocFromPoolAsync(p, bytes, driver.pool, s);
        }
        if (rc == CUDA_SUCCESS || rc == CUDA_ERROR_OUT_OF_MEMORY) {
            return rc;
        }
    }
    rc = cuda_drv->MemAllocAsync(p, bytes, s);
    if (rc == CUDA_ERROR_NOT_SUPPORTED) { /* no stream-ordered allocation here */
        *async = 0;
        rc = cuda_drv->MemAlloc(p, bytes);
    }
    return rc;
}

void
cuda_mem_trim(void)
{
    if (cuda_drv != NULL && driver.pool != NULL) {
        /* the context is shared (CuPy, PyTorch): their host callbacks may
         * want the GIL while it drains */
        PyThreadState *ts = PyEval_SaveThread();
        cuda_drv->CtxSynchronize();
        cuda_drv->MemPoolTrimTo(driver.pool, 0);
        PyEval_RestoreThread(ts);
    }
}

int
cuda_is_available(void)
{
    return load() == 0;
}

const CudaDriver *
cuda_driver(void)
{
    if (load() < 0) {
        PyErr_SetString(nv_state.cuda_support_error, driver.error);
        return NULL;
    }
    return cuda_drv;
}

int
cuda_enter(void)
{
    if (cuda_driver() == NULL) {
        return -1;
    }
    CUcontext cur = NULL;
    if (driver.api.CtxGetCurrent(&cur) == CUDA_SUCCESS && cur == driver.context) {
        return 0;
    }
    return cuda_check(driver.api.CtxSetCurrent(driver.context), "cuCtxSetCurrent");
}

int
cuda_check(CUresult rc, const char *what)
{
    if (rc == CUDA_SUCCESS) {
        return 0;
    }
    const char *cname, *ctext;
    describe(rc, &cname, &ctext);
    if (rc == CUDA_ERROR_OUT_OF_MEMORY) {
        PyErr_Format(PyExc_MemoryError, "%s: %s: %s", what, cname, ctext);
        return -1;
    }
    PyObject *name = PyUnicode_FromString(cname);
    PyObject *text = PyUnicode_FromFormat("%s: %s (%s)", cname, ctext, what);
    PyObject *exc = (name && text) ? PyObject_CallFunction(nv_state.cuda_error, "O", text) : NULL;
    if (exc != NULL) {
        /* the driver's name and code, for callers that test them */
        if (PyObject_SetAttrString(exc, "name", name) == 0) {
            PyObject *code = PyLong_FromLong(rc);
            if (code != NULL) {
                PyObject_SetAttrString(exc, "code", code);
                Py_DECREF(code);
            }
        }
        PyErr_SetObject(nv_state.cuda_error, exc);
        Py_DECREF(exc);
    }
    Py_XDECREF(name);
    Py_XDECREF(text);
    return -1;
}

/* ---- detect ---- */

static PyObject *
device_info(int ordinal)
{
    CUdevice dev;
    char name[256] = "";
    int major = 0, minor = 0, sms = 0, bus = 0, pools = 0;
    size_t total = 0;
    const CudaDriver *d = cuda_drv;
    if (cuda_check(d->DeviceGet(&dev, ordinal), "cuDeviceGet") < 0
        || cuda_check(d->DeviceGetName(name, sizeof(name), dev), "cuDeviceGetName") < 0
        || cuda_check(
               d->DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
               "cuDeviceGetAttribute")
               < 0
        || cuda_check(
               d->DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
               "cuDeviceGetAttribute")
               < 0
        || cuda_check(d->DeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
                      "cuDeviceGetAttribute")
               < 0
        || cuda_check(d->DeviceTotalMem(&total, dev), "cuDeviceTotalMem") < 0) {
        return NULL;
    }
    d->DeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev);
    d->DeviceGetAttribute(&pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, dev);
    PyObject *info = Py_BuildValue("{s:i,s:s,s:(ii),s:i,s:K,s:i,s:O}", "index", ordinal, "name",
                                   name, "compute_capability", major, minor, "multiprocessors", sms,
                                   "total_memory", (unsigned long long)total, "pci_bus_id", bus,
                                   "memory_pools", pools ? Py_True : Py_False);
    return info;
}

PyObject *
cuda_detect(void)
{
    if (cuda_driver() == NULL) {
        return NULL;
    }
    int count = 0, version = 0;
    if (cuda_check(cuda_drv->DeviceGetCount(&count), "cuDeviceGetCount") < 0
        || cuda_check(cuda_drv->DriverGetVersion(&version), "cuDriverGetVersion") < 0) {
        return NULL;
    }
    PyObject *devices = PyList_New(0);
    for (int i = 0; devices != NULL && i < count; i++) {
        PyObject *info = device_info(i);
        if (info == NULL || PyList_Append(devices, info) < 0) {
            Py_CLEAR(devices);
        }
        Py_XDECREF(info);
    }
    if (devices == NULL) {
        return NULL;
    }
    PyObject *result = Py_BuildValue("{s:(ii),s:N}", "driver_version", version / 1000,
                                     version % 1000 / 10, "devices", devices);
    return result;
}

/* The reason the driver is unavailable, or None. */
PyObject *
cuda_unavailable_reason(void)
{
    if (load() == 0) {
        Py_RETURN_NONE;
    }
    return PyUnicode_FromString(driver.error);
}

CUdevice
cuda_device(void)
{
    return driver.device;
}

int
cuda_device_ordinal(void)
{
    return cuda_drv != NULL ? (int)cuda_device() : 0;
}
