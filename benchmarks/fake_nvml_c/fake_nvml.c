/*
 * A libnvidia-ml.so.1 for the benchmarks: the C functions nvtop 3.0 looks up (dlsym), each
 * forwarded into the Python FakeNvml that gputop, nvitop and gpustat see in the same run, so
 * every tool shows the same fake GPUs with the same moving values.
 *
 * The library embeds CPython (the benchmark builds it against the Python that runs the
 * benchmark) and imports benchmarks/nvml_c_adapter.py, which builds the scenario's fake from
 * the same environment variables as bench_tui's child and turns each raw pointer into the
 * ctypes object pynvml would have passed. The fake's Python stands in for the driver's C
 * code, so the thread CPU spent in here is counted and written, on SIGUSR1, to
 * GPUTOP_BENCH_FAKE_LOG as "<ns inside the fake> <ns the counting cost> <ns of prices>", the
 * format bench_tui reads for the Python tools.
 *
 * Priced mode (GPUTOP_FAKE_NVML_COSTS=FILE, with GPUTOP_FAKE_NVML_PRICE_LIB naming this very
 * library): each call spends what it costs on a real GPU, in C (price.c, included here), with
 * the GIL let go as a real driver call does; the third number of the log is that part.
 *
 * Built by bench_tui (gcc -shared) into benchmarks/_data/; never installed.
 */

#define _GNU_SOURCE
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_UNKNOWN 999

#define EXPORT __attribute__((visibility("default")))
#define U(x) ((unsigned long long)(uintptr_t)(x))

#include "price.c"

static pthread_once_t started = PTHREAD_ONCE_INIT;
static PyObject *forward_call; /* nvml_c_adapter.call */
static PyObject *error_text;   /* nvml_c_adapter.error_string */

static uint64_t inside_ns;  /* thread CPU spent in forwarded calls, every thread */
static uint64_t calls;      /* how many */
static uint64_t clock_cost; /* CPU ns one pair of clock reads costs, measured at start */
static char log_path[4096];

static uint64_t thread_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

static size_t put_number(char *out, uint64_t value) {
  char digits[24];
  size_t count = 0;
  do {
    digits[count++] = (char)('0' + value % 10);
    value /= 10;
  } while (value);
  for (size_t i = 0; i < count; ++i)
    out[i] = digits[count - 1 - i];
  return count;
}

/* SIGUSR1: append the counts to the log (only async-signal-safe calls in here). */
static void report(int signal_number) {
  (void)signal_number;
  char line[96];
  uint64_t spent = __atomic_load_n(&inside_ns, __ATOMIC_RELAXED);
  uint64_t counted = __atomic_load_n(&calls, __ATOMIC_RELAXED);
  size_t length = put_number(line, spent);
  line[length++] = ' ';
  length += put_number(line + length, counted * clock_cost);
  line[length++] = ' ';
  length += put_number(line + length, gputop_fake_nvml_spent_ns());
  line[length++] = '\n';
  int saved = errno;
  int fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd >= 0) {
    ssize_t written = write(fd, line, length);
    (void)written;
    close(fd);
  }
  errno = saved;
}

static void measure_clock_cost(void) {
  enum { ROUNDS = 20000 };
  uint64_t begin = thread_ns();
  for (int i = 0; i < ROUNDS; ++i) {
    (void)thread_ns();
    (void)thread_ns();
  }
  clock_cost = (thread_ns() - begin) / ROUNDS;
}

static void start_python(void) {
  /* nvtop dlopens this library without RTLD_GLOBAL, so libpython came in local to it, and
     Python's extension modules (_ctypes) could not find its symbols: make them global. */
  Dl_info python;
  if (dladdr((void *)Py_InitializeEx, &python) && python.dli_fname)
    dlopen(python.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
  /* Python's own handlers (SIGINT, SIGPIPE) stay nvtop's business. */
  Py_InitializeEx(0);
  PyObject *adapter = PyImport_ImportModule("nvml_c_adapter");
  if (adapter) {
    forward_call = PyObject_GetAttrString(adapter, "call");
    error_text = PyObject_GetAttrString(adapter, "error_string");
    Py_DECREF(adapter);
  }
  if (!forward_call || !error_text) {
    PyErr_Print();
    fprintf(stderr, "fake libnvidia-ml: cannot import nvml_c_adapter (PYTHONPATH?)\n");
  }
  measure_clock_cost();
  const char *log = getenv("GPUTOP_BENCH_FAKE_LOG");
  if (log && strlen(log) < sizeof log_path) {
    strcpy(log_path, log);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = report;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaction(SIGUSR1, &action, NULL);
  }
  /* Let any thread take the GIL from now on. */
  PyEval_SaveThread();
}

/* Call nvml_c_adapter.call(name, *args) with `count` unsigned long long arguments. */
static int forward(const char *name, int count, ...) {
  pthread_once(&started, start_python);
  if (!forward_call)
    return NVML_ERROR_UNINITIALIZED;
  uint64_t begin = thread_ns();
  PyGILState_STATE gil = PyGILState_Ensure();
  int code = NVML_ERROR_UNKNOWN;
  PyObject *args = PyTuple_New(count + 1);
  PyTuple_SET_ITEM(args, 0, PyUnicode_FromString(name));
  va_list values;
  va_start(values, count);
  for (int i = 0; i < count; ++i)
    PyTuple_SET_ITEM(args, i + 1, PyLong_FromUnsignedLongLong(va_arg(values, unsigned long long)));
  va_end(values);
  PyObject *result = PyObject_CallObject(forward_call, args);
  Py_DECREF(args);
  if (result) {
    code = (int)PyLong_AsLong(result);
    Py_DECREF(result);
  }
  if (PyErr_Occurred()) {
    PyErr_Print();
    code = NVML_ERROR_UNKNOWN;
  }
  PyGILState_Release(gil);
  __atomic_fetch_add(&inside_ns, thread_ns() - begin, __ATOMIC_RELAXED);
  __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
  return code;
}

/* ----- init and errors ------------------------------------------------------------- */

EXPORT int nvmlInit_v2(void) { return forward("nvmlInit_v2", 0); }
EXPORT int nvmlInit(void) { return forward("nvmlInit", 0); }
EXPORT int nvmlShutdown(void) { return forward("nvmlShutdown", 0); }

EXPORT const char *nvmlErrorString(int code) {
  static __thread char text[256];
  snprintf(text, sizeof text, "fake NVML error %d", code);
  pthread_once(&started, start_python);
  if (!error_text)
    return text;
  PyGILState_STATE gil = PyGILState_Ensure();
  PyObject *result = PyObject_CallFunction(error_text, "i", code);
  if (result && PyBytes_Check(result))
    snprintf(text, sizeof text, "%s", PyBytes_AS_STRING(result));
  Py_XDECREF(result);
  PyErr_Clear();
  PyGILState_Release(gil);
  return text;
}

/* ----- devices --------------------------------------------------------------------- */

EXPORT int nvmlDeviceGetCount_v2(unsigned *count) {
  return forward("nvmlDeviceGetCount_v2", 1, U(count));
}
EXPORT int nvmlDeviceGetCount(unsigned *count) {
  return forward("nvmlDeviceGetCount", 1, U(count));
}
EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned index, void **device) {
  return forward("nvmlDeviceGetHandleByIndex_v2", 2, U(index), U(device));
}
EXPORT int nvmlDeviceGetHandleByIndex(unsigned index, void **device) {
  return forward("nvmlDeviceGetHandleByIndex", 2, U(index), U(device));
}
EXPORT int nvmlDeviceGetName(void *device, char *name, unsigned length) {
  return forward("nvmlDeviceGetName", 3, U(device), U(name), U(length));
}
EXPORT int nvmlDeviceGetPciInfo_v3(void *device, void *info) {
  return forward("nvmlDeviceGetPciInfo_v3", 2, U(device), U(info));
}
EXPORT int nvmlDeviceGetPciInfo_v2(void *device, void *info) {
  return forward("nvmlDeviceGetPciInfo_v2", 2, U(device), U(info));
}
EXPORT int nvmlDeviceGetPciInfo(void *device, void *info) {
  return forward("nvmlDeviceGetPciInfo", 2, U(device), U(info));
}

/* ----- one unsigned int out -------------------------------------------------------- */

#define UINT_OUT(function)                                                               \
  EXPORT int function(void *device, unsigned *out) {                                    \
    return forward(#function, 2, U(device), U(out));                                    \
  }

UINT_OUT(nvmlDeviceGetMaxPcieLinkGeneration)
UINT_OUT(nvmlDeviceGetMaxPcieLinkWidth)
UINT_OUT(nvmlDeviceGetCurrPcieLinkGeneration)
UINT_OUT(nvmlDeviceGetCurrPcieLinkWidth)
UINT_OUT(nvmlDeviceGetFanSpeed)
UINT_OUT(nvmlDeviceGetPowerUsage)
UINT_OUT(nvmlDeviceGetEnforcedPowerLimit)

/* ----- an enum in, one unsigned int out -------------------------------------------- */

#define ENUM_UINT_OUT(function)                                                          \
  EXPORT int function(void *device, int which, unsigned *out) {                         \
    return forward(#function, 3, U(device), U((unsigned)which), U(out));                \
  }

ENUM_UINT_OUT(nvmlDeviceGetTemperatureThreshold)
ENUM_UINT_OUT(nvmlDeviceGetTemperature)
ENUM_UINT_OUT(nvmlDeviceGetClockInfo)
ENUM_UINT_OUT(nvmlDeviceGetMaxClockInfo)
ENUM_UINT_OUT(nvmlDeviceGetPcieThroughput)

/* ----- structs and pairs ----------------------------------------------------------- */

EXPORT int nvmlDeviceGetUtilizationRates(void *device, void *rates) {
  return forward("nvmlDeviceGetUtilizationRates", 2, U(device), U(rates));
}
EXPORT int nvmlDeviceGetMemoryInfo(void *device, void *memory) {
  return forward("nvmlDeviceGetMemoryInfo", 2, U(device), U(memory));
}
EXPORT int nvmlDeviceGetEncoderUtilization(void *device, unsigned *rate, unsigned *period) {
  return forward("nvmlDeviceGetEncoderUtilization", 3, U(device), U(rate), U(period));
}
EXPORT int nvmlDeviceGetDecoderUtilization(void *device, unsigned *rate, unsigned *period) {
  return forward("nvmlDeviceGetDecoderUtilization", 3, U(device), U(rate), U(period));
}

/* ----- processes (nvtop passes the v1 layout: pid, usedGpuMemory) ------------------ */

EXPORT int nvmlDeviceGetGraphicsRunningProcesses(void *device, unsigned *count, void *infos) {
  return forward("nvmlDeviceGetGraphicsRunningProcesses", 3, U(device), U(count), U(infos));
}
EXPORT int nvmlDeviceGetComputeRunningProcesses(void *device, unsigned *count, void *infos) {
  return forward("nvmlDeviceGetComputeRunningProcesses", 3, U(device), U(count), U(infos));
}
EXPORT int nvmlDeviceGetProcessUtilization(void *device, void *samples, unsigned *count,
                                           unsigned long long since) {
  return forward("nvmlDeviceGetProcessUtilization", 4, U(device), U(samples), U(count), since);
}
