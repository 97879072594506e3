/*
 * fake_nvml.c: a stand-in for libnvidia-ml.so.1 so the real nvml-wrapper code path can be
 * tested on machines without an NVIDIA GPU or driver.
 *
 * Struct layouts and return codes follow the NVML header as bound by nvml-wrapper-sys 0.10.0
 * (nvmlMemory_v2_t is 40 bytes, so its version word is 40 | 2 << 24; nvmlProcessInfo_t is the
 * 24-byte v2/v3 layout). Symbols that are not defined here make nvml-wrapper return
 * FailedToLoadSymbol for that one call, which is what an older driver does
 * (shared/research/monitor.md section 3).
 *
 * The scenario is a text file of `key = value` lines, read at every nvmlInit*. It is found at
 * $FAKE_NVML_SCENARIO, or else as `fake_nvml_scenario.txt` next to this library (so tests that
 * load separate copies of the library from separate directories never share state).
 *
 *   gpus = 2                    number of GPUs (max 8)
 *   init_rc = 9                 nvmlInit* returns this code ...
 *   init_fail_times = 2         ... only for the first N init calls (0 = always)
 *   driver_version = 555.42.06
 *   gpuN.name / gpuN.uuid
 *   gpuN.total_mib / used_mib / reserved_mib
 *   gpuN.ramp_mib = 64          used grows by this much per sample (may be negative)
 *   gpuN.spike_mib = 4000 / gpuN.spike_at = 5 / gpuN.spike_len = 2
 *   gpuN.util_gpu / util_mem / temp_c / power_w / power_limit_w
 *   gpuN.clock_graphics / clock_sm / clock_mem (MHz) / pcie_rx_kbps / pcie_tx_kbps
 *   gpuN.pcie_ramp_kbps = 100   both PCIe counters grow by this much per sample
 *   gpuN.throttle = 0x20        raw NVML throttle-reason bits
 *   gpuN.procs  = pid:mib[:name][@from[-to]],...   compute processes, present in samples from..to
 *   gpuN.gprocs = ...           graphics processes, same syntax
 *   gpuN.proc_mem_na = 1        per-process memory reported as NVML_VALUE_NOT_AVAILABLE (WDDM)
 *   gpuN.procs_dir = DIR        more compute processes, read at every sample from the files in DIR:
 *                               each holds one line `pid mib`, written by the process itself (so a
 *                               test's child program "allocates" by rewriting its file); a pid
 *                               that no longer exists is left out, and the memory of the listed
 *                               processes adds to the GPU's used memory
 *   gpuN.unsupported = temp,power,clocks,pcie,util,throttle,procs,mem,uuid
 *   gpuN.fail = 15@3-5          every call on this GPU returns rc 15 (GPU lost) in samples 3..5
 *
 * A "sample" of a GPU is counted by its memory queries (v1 or v2): the Nth memory query is
 * sample N-1, and every other call sees the sample of the latest memory query.
 *
 * Build with `-Wl,-z,nodelete` so counters survive nvml-wrapper's dlclose after a failed init.
 *
 * Compile-time switches: -DNO_MEM_V2 leaves out nvmlDeviceGetMemoryInfo_v2 (a driver older than
 * R510), -DNO_SHUTDOWN leaves out nvmlShutdown.
 *
 * The same file builds the Windows `nvml.dll` with MinGW (tests/wine_nvml.rs:
 * `x86_64-w64-mingw32-gcc -shared -o nvml.dll fake_nvml.c`); the few POSIX calls have Win32
 * twins below (the library's own path, whether a pid is alive).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _WIN32
#include <windows.h>
#define EXPORT __declspec(dllexport)
#else
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#define EXPORT __attribute__((visibility("default")))
#endif

typedef int nvmlReturn_t;
enum {
    OK = 0, E_UNINIT = 1, E_ARG = 2, E_NOT_SUPPORTED = 3, E_NOT_FOUND = 6, E_SIZE = 7,
    E_FUNCTION_NOT_FOUND = 13
};

typedef struct nvmlDevice_st { unsigned int index; } *nvmlDevice_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { unsigned int version; unsigned long long total, reserved, free, used; } nvmlMemory_v2_t;
typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;
typedef struct { unsigned int pid; unsigned long long usedGpuMemory;
                 unsigned int gpuInstanceId, computeInstanceId; } nvmlProcessInfo_t;

#define MAX_GPUS 8
#define MAX_PROCS 16
#define MIB (1024ULL * 1024ULL)
#define NOT_AVAILABLE 0xFFFFFFFFFFFFFFFFULL

typedef struct { unsigned int pid; long long mib; char name[32]; long from, to; } proc_t;
enum { U_TEMP = 1, U_POWER = 2, U_CLOCKS = 4, U_PCIE = 8, U_UTIL = 16, U_THROTTLE = 32,
       U_PROCS = 64, U_MEM = 128, U_UUID = 256 };

typedef struct {
    char name[96], uuid[80];
    long long total_mib, used_mib, reserved_mib, ramp_mib, spike_mib, spike_at, spike_len;
    unsigned int util_gpu, util_mem, temp_c, power_w, power_limit_w;
    unsigned int clock_graphics, clock_sm, clock_mem, pcie_rx, pcie_tx, pcie_ramp_kbps;
    unsigned long long throttle;
    proc_t procs[MAX_PROCS], gprocs[MAX_PROCS];
    int nprocs, ngprocs, proc_mem_na, unsupported;
    char procs_dir[512];
    int fail_rc; long fail_from, fail_to;
    long samples; /* memory queries so far */
} gpu_t;

static struct nvmlDevice_st g_handles[MAX_GPUS];
static gpu_t g_gpu[MAX_GPUS];
static unsigned int g_count = 1;
static int g_init_rc = 0, g_init_fail_times = 0, g_init_calls = 0, g_inited = 0;
static char g_driver[32] = "555.42.06";

static void set_defaults(void) {
    g_count = 1; g_init_rc = 0; g_init_fail_times = 0;
    strcpy(g_driver, "555.42.06");
    for (unsigned int i = 0; i < MAX_GPUS; i++) {
        gpu_t *g = &g_gpu[i];
        long samples = g->samples;
        memset(g, 0, sizeof *g);
        g->samples = samples;
        snprintf(g->name, sizeof g->name, "Fake NVIDIA GeForce RTX 4090 #%u", i);
        snprintf(g->uuid, sizeof g->uuid, "GPU-fa4e0000-0000-0000-0000-00000000000%u", i);
        g->total_mib = 24564; g->used_mib = 1024; g->reserved_mib = 300;
        g->util_gpu = 37; g->util_mem = 12; g->temp_c = 54; g->power_w = 123; g->power_limit_w = 450;
        g->clock_graphics = 2520; g->clock_sm = 2520; g->clock_mem = 10501;
        g->pcie_rx = 65536; g->pcie_tx = 2048;
        g_handles[i].index = i;
    }
}

/* "pid:mib[:name][@from[-to]]" list */
static int parse_procs(const char *v, proc_t *out) {
    char buf[1024];
    strncpy(buf, v, sizeof buf - 1); buf[sizeof buf - 1] = 0;
    int n = 0; char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok && n < MAX_PROCS; tok = strtok_r(NULL, ",", &save)) {
        proc_t p = { 0, 0, "", 0, -1 };
        char *at = strchr(tok, '@');
        if (at) {
            *at = 0;
            p.from = strtol(at + 1, NULL, 10);
            char *dash = strchr(at + 1, '-');
            if (dash) p.to = strtol(dash + 1, NULL, 10);
        }
        char *name = NULL, *c1 = strchr(tok, ':');
        if (!c1) continue;
        *c1 = 0;
        char *c2 = strchr(c1 + 1, ':');
        if (c2) { *c2 = 0; name = c2 + 1; }
        p.pid = (unsigned int)strtoul(tok, NULL, 10);
        p.mib = strtoll(c1 + 1, NULL, 10);
        if (name) { strncpy(p.name, name, sizeof p.name - 1); }
        out[n++] = p;
    }
    return n;
}

static int parse_unsupported(const char *v) {
    static const struct { const char *k; int bit; } keys[] = {
        {"temp", U_TEMP}, {"power", U_POWER}, {"clocks", U_CLOCKS}, {"pcie", U_PCIE}, {"util", U_UTIL},
        {"throttle", U_THROTTLE}, {"procs", U_PROCS}, {"mem", U_MEM}, {"uuid", U_UUID} };
    int bits = 0;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strstr(v, keys[i].k)) bits |= keys[i].bit;
    return bits;
}

static void apply(const char *key, const char *v) {
    if (!strcmp(key, "gpus")) { long n = strtol(v, NULL, 10); g_count = n < 0 ? 0 : n > MAX_GPUS ? MAX_GPUS : (unsigned)n; return; }
    if (!strcmp(key, "init_rc")) { g_init_rc = (int)strtol(v, NULL, 10); return; }
    if (!strcmp(key, "init_fail_times")) { g_init_fail_times = (int)strtol(v, NULL, 10); return; }
    if (!strcmp(key, "driver_version")) { strncpy(g_driver, v, sizeof g_driver - 1); return; }
    if (strncmp(key, "gpu", 3) != 0) return;
    char *dot = NULL;
    long idx = strtol(key + 3, &dot, 10);
    if (!dot || *dot != '.' || idx < 0 || idx >= MAX_GPUS) return;
    gpu_t *g = &g_gpu[idx];
    const char *k = dot + 1;
#define NUM(field) if (!strcmp(k, #field)) { g->field = strtoll(v, NULL, 0); return; }
    NUM(total_mib) NUM(used_mib) NUM(reserved_mib) NUM(ramp_mib) NUM(spike_mib) NUM(spike_at) NUM(spike_len)
    NUM(util_gpu) NUM(util_mem) NUM(temp_c) NUM(power_w) NUM(power_limit_w)
    NUM(clock_graphics) NUM(clock_sm) NUM(clock_mem) NUM(throttle) NUM(proc_mem_na) NUM(pcie_ramp_kbps)
#undef NUM
    if (!strcmp(k, "pcie_rx_kbps")) { g->pcie_rx = (unsigned)strtoul(v, NULL, 10); return; }
    if (!strcmp(k, "pcie_tx_kbps")) { g->pcie_tx = (unsigned)strtoul(v, NULL, 10); return; }
    if (!strcmp(k, "name")) { strncpy(g->name, v, sizeof g->name - 1); return; }
    if (!strcmp(k, "uuid")) { strncpy(g->uuid, v, sizeof g->uuid - 1); return; }
    if (!strcmp(k, "procs_dir")) { strncpy(g->procs_dir, v, sizeof g->procs_dir - 1); return; }
    if (!strcmp(k, "procs")) { g->nprocs = parse_procs(v, g->procs); return; }
    if (!strcmp(k, "gprocs")) { g->ngprocs = parse_procs(v, g->gprocs); return; }
    if (!strcmp(k, "unsupported")) { g->unsupported = parse_unsupported(v); return; }
    if (!strcmp(k, "fail")) {
        const char *at = strchr(v, '@');
        g->fail_rc = (int)strtol(v, NULL, 10);
        g->fail_from = at ? strtol(at + 1, NULL, 10) : 0;
        const char *dash = at ? strchr(at + 1, '-') : NULL;
        g->fail_to = dash ? strtol(dash + 1, NULL, 10) : -1;
        return;
    }
}

/* This library's own file name, from the address of one of its functions. */
static int library_path(char *out, size_t len) {
#ifdef _WIN32
    HMODULE self = NULL;
    if (!GetModuleHandleExA(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS |
                            GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                            (LPCSTR)(void *)&set_defaults, &self))
        return 0;
    DWORD n = GetModuleFileNameA(self, out, (DWORD)len);
    return n > 0 && n < len;
#else
    Dl_info info;
    if (!dladdr((void *)&set_defaults, &info) || !info.dli_fname) return 0;
    strncpy(out, info.dli_fname, len - 1); out[len - 1] = 0;
    return 1;
#endif
}

/* Whether a process with this pid is running. */
static int pid_alive(unsigned int pid) {
#ifdef _WIN32
    HANDLE h = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, pid);
    if (!h) return GetLastError() == ERROR_ACCESS_DENIED;
    DWORD code = 0;
    int alive = GetExitCodeProcess(h, &code) && code == STILL_ACTIVE;
    CloseHandle(h);
    return alive;
#else
    return kill((pid_t)pid, 0) == 0 || errno == EPERM;
#endif
}

static void scenario_path(char *out, size_t len) {
    const char *env = getenv("FAKE_NVML_SCENARIO");
    if (env && *env) { strncpy(out, env, len - 1); out[len - 1] = 0; return; }
    out[0] = 0;
    if (library_path(out, len)) {
        char *slash = strrchr(out, '/');
#ifdef _WIN32
        char *back = strrchr(out, '\\');
        if (back && (!slash || back > slash)) slash = back;
#endif
        size_t dir = slash ? (size_t)(slash - out + 1) : 0;
        snprintf(out + dir, len - dir, "fake_nvml_scenario.txt");
    }
}

static void load_scenario(void) {
    set_defaults();
    char path[4096];
    scenario_path(path, sizeof path);
    FILE *f = path[0] ? fopen(path, "r") : NULL;
    if (!f) return;
    char line[1200];
    while (fgets(line, sizeof line, f)) {
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        char *eq = strchr(line, '=');
        if (!eq) continue;
        *eq = 0;
        char *k = line, *v = eq + 1;
        while (*k == ' ' || *k == '\t') k++;
        char *ke = k + strlen(k);
        while (ke > k && (ke[-1] == ' ' || ke[-1] == '\t')) *--ke = 0;
        while (*v == ' ' || *v == '\t') v++;
        v[strcspn(v, "\r\n")] = 0;
        char *ve = v + strlen(v);
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) *--ve = 0;
        apply(k, v);
    }
    fclose(f);
}

/* ---------- helpers ---------- */
static gpu_t *dev(nvmlDevice_t d) {
    if (!g_inited || d < &g_handles[0] || d >= &g_handles[g_count]) return NULL;
    return &g_gpu[d->index];
}
static long cur_sample(const gpu_t *g) { return g->samples > 0 ? g->samples - 1 : 0; }
static int in_range(long s, long from, long to) { return s >= from && (to < 0 || s <= to); }
/* the injected fault for this GPU now, or 0 */
static nvmlReturn_t fault(const gpu_t *g) {
    return (g->fail_rc && in_range(cur_sample(g), g->fail_from, g->fail_to)) ? g->fail_rc : OK;
}
/* common prologue: valid handle, no injected fault, metric supported */
#define CHECK(d, ptr, bit) \
    gpu_t *g = dev(d); \
    if (!g || !(ptr)) return E_ARG; \
    if (fault(g)) return fault(g); \
    if (g->unsupported & (bit)) return E_NOT_SUPPORTED;
static void copy_str(char *dst, unsigned int len, const char *src) {
    if (!dst || len == 0) return;
    strncpy(dst, src, len - 1); dst[len - 1] = 0;
}

/* ---------- init / system ---------- */
static nvmlReturn_t do_init(void) {
    load_scenario();
    g_init_calls++;
    if (g_init_rc && (g_init_fail_times == 0 || g_init_calls <= g_init_fail_times)) return g_init_rc;
    g_inited++;
    return OK;
}
EXPORT nvmlReturn_t nvmlInit_v2(void) { return do_init(); }
EXPORT nvmlReturn_t nvmlInit(void) { return do_init(); }
EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags) { (void)flags; return do_init(); }
#ifndef NO_SHUTDOWN
EXPORT nvmlReturn_t nvmlShutdown(void) {
    if (g_inited <= 0) return E_UNINIT;
    g_inited--;
    return OK;
}
#endif
EXPORT const char *nvmlErrorString(nvmlReturn_t r) {
    switch (r) {
    case 0: return "Success";
    case 3: return "Not Supported";
    case 4: return "Insufficient Permissions";
    case 9: return "Driver Not Loaded";
    case 15: return "GPU is lost";
    case 18: return "RM has detected an NVML/RM version mismatch";
    default: return "Unknown Error";
    }
}
EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned int len) {
    if (!g_inited) return E_UNINIT;
    copy_str(v, len, g_driver);
    return OK;
}
static const char *proc_name(const proc_t *ps, int n, unsigned int pid) {
    for (int i = 0; i < n; i++) if (ps[i].pid == pid && ps[i].name[0]) return ps[i].name;
    return NULL;
}
EXPORT nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char *name, unsigned int len) {
    if (!g_inited) return E_UNINIT;
    for (unsigned int i = 0; i < g_count; i++) {
        const char *n = proc_name(g_gpu[i].procs, g_gpu[i].nprocs, pid);
        if (!n) n = proc_name(g_gpu[i].gprocs, g_gpu[i].ngprocs, pid);
        if (n) { copy_str(name, len, n); return OK; }
    }
    return E_NOT_FOUND;
}

/* ---------- devices ---------- */
EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *c) {
    if (!g_inited) return E_UNINIT;
    if (!c) return E_ARG;
    *c = g_count;
    return OK;
}
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d) {
    if (!g_inited) return E_UNINIT;
    if (!d || i >= g_count) return E_ARG;
    *d = &g_handles[i];
    return OK;
}
EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int len) {
    CHECK(d, name, 0);
    copy_str(name, len, g->name);
    return OK;
}
EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int len) {
    CHECK(d, uuid, U_UUID);
    copy_str(uuid, len, g->uuid);
    return OK;
}

/* The live processes that wrote a `pid mib` file into procs_dir (at most `max`). */
static int dir_procs(const gpu_t *g, proc_t *out, int max) {
    if (!g->procs_dir[0]) return 0;
    DIR *d = opendir(g->procs_dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while (n < max && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", g->procs_dir, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        unsigned int pid = 0; long long mib = 0;
        int ok = fscanf(f, "%u %lld", &pid, &mib) == 2;
        fclose(f);
        if (!ok || pid == 0 || !pid_alive(pid)) continue;
        proc_t p = { pid, mib, "", 0, -1 };
        out[n++] = p;
    }
    closedir(d);
    return n;
}

/* ---------- memory: each query is one sample ---------- */
static nvmlReturn_t mem_values(nvmlDevice_t d, unsigned long long *total, unsigned long long *reserved,
                               unsigned long long *used) {
    gpu_t *g = dev(d);
    if (!g) return E_ARG;
    g->samples++;
    if (fault(g)) return fault(g);
    if (g->unsupported & U_MEM) return E_NOT_SUPPORTED;
    long s = cur_sample(g);
    long long u = g->used_mib + g->ramp_mib * s;
    proc_t extra[MAX_PROCS];
    int nx = dir_procs(g, extra, MAX_PROCS);
    for (int i = 0; i < nx; i++) u += extra[i].mib;
    if (g->spike_mib && in_range(s, g->spike_at, g->spike_at + (g->spike_len > 0 ? g->spike_len : 1) - 1))
        u += g->spike_mib;
    long long cap = g->total_mib - g->reserved_mib;
    if (u < 0) u = 0;
    if (u > cap) u = cap;
    *total = (unsigned long long)g->total_mib * MIB;
    *reserved = (unsigned long long)g->reserved_mib * MIB;
    *used = (unsigned long long)u * MIB;
    return OK;
}
EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m) {
    if (!m) return E_ARG;
    unsigned long long t = 0, r = 0, u = 0;
    nvmlReturn_t rc = mem_values(d, &t, &r, &u);
    if (rc) return rc;
    /* v1 semantics: reserved memory counts as used */
    m->total = t; m->used = u + r; m->free = t - u - r;
    return OK;
}
#ifndef NO_MEM_V2
EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m) {
    if (!m) return E_ARG;
    /* NVML_STRUCT_VERSION(Memory, 2); real drivers answer a wrong version with FUNCTION_NOT_FOUND */
    if (m->version != ((unsigned int)sizeof(nvmlMemory_v2_t) | (2u << 24))) return E_FUNCTION_NOT_FOUND;
    unsigned long long t = 0, r = 0, u = 0;
    nvmlReturn_t rc = mem_values(d, &t, &r, &u);
    if (rc) return rc;
    m->total = t; m->reserved = r; m->used = u; m->free = t - u - r;
    return OK;
}
#endif

/* ---------- utilization and sensors ---------- */
EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u) {
    CHECK(d, u, U_UTIL);
    u->gpu = g->util_gpu; u->memory = g->util_mem;
    return OK;
}
EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *t) {
    CHECK(d, t, U_TEMP);
    if (sensor != 0) return E_ARG;
    *t = g->temp_c;
    return OK;
}
EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw) {
    CHECK(d, mw, U_POWER);
    *mw = g->power_w * 1000;
    return OK;
}
EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned int *mw) {
    CHECK(d, mw, U_POWER);
    *mw = g->power_limit_w * 1000;
    return OK;
}
EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int *mhz) {
    CHECK(d, mhz, U_CLOCKS);
    switch (type) { /* NVML_CLOCK_GRAPHICS, _SM, _MEM */
    case 0: *mhz = g->clock_graphics; return OK;
    case 1: *mhz = g->clock_sm; return OK;
    case 2: *mhz = g->clock_mem; return OK;
    default: return E_NOT_SUPPORTED;
    }
}
EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t d, int counter, unsigned int *kbps) {
    CHECK(d, kbps, U_PCIE);
    *kbps = (counter == 0 ? g->pcie_tx : g->pcie_rx) + g->pcie_ramp_kbps * (unsigned int)cur_sample(g); /* TX = 0, RX = 1 */
    return OK;
}
EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long *r) {
    CHECK(d, r, U_THROTTLE);
    *r = g->throttle;
    return OK;
}

/* ---------- processes ---------- */
static nvmlReturn_t list_procs(nvmlDevice_t d, unsigned int *count, nvmlProcessInfo_t *infos, int graphics) {
    CHECK(d, count, U_PROCS);
    const proc_t *src = graphics ? g->gprocs : g->procs;
    int n_src = graphics ? g->ngprocs : g->nprocs;
    long s = cur_sample(g);
    proc_t all[2 * MAX_PROCS];
    memcpy(all, src, (size_t)n_src * sizeof *src);
    if (!graphics) n_src += dir_procs(g, all + n_src, MAX_PROCS);
    src = all;
    nvmlProcessInfo_t tmp[2 * MAX_PROCS];
    unsigned int n = 0;
    for (int i = 0; i < n_src; i++) {
        if (!in_range(s, src[i].from, src[i].to)) continue;
        tmp[n].pid = src[i].pid;
        tmp[n].usedGpuMemory = g->proc_mem_na ? NOT_AVAILABLE : (unsigned long long)src[i].mib * MIB;
        tmp[n].gpuInstanceId = 0xFFFFFFFFu;
        tmp[n].computeInstanceId = 0xFFFFFFFFu;
        n++;
    }
    if (*count < n || (!infos && n > 0)) { *count = n; return E_SIZE; }
    *count = n;
    if (infos && n) memcpy(infos, tmp, n * sizeof *tmp);
    return OK;
}
EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *c, nvmlProcessInfo_t *p) {
    return list_procs(d, c, p, 0);
}
EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t d, unsigned int *c, nvmlProcessInfo_t *p) {
    return list_procs(d, c, p, 1);
}

/* ---------- extras for Python monitors (pynvml: gpustat, nvitop), so the cost comparison in
 * benches/compare_monitors.sh can run every tool against this same library. nvml-wrapper
 * does not need them. ---------- */
EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *v, unsigned int len) {
    if (!g_inited) return E_UNINIT;
    char buf[48];
    snprintf(buf, sizeof buf, "12.%s", g_driver);
    copy_str(v, len, buf);
    return OK;
}
EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v) { if (!v) return E_ARG; *v = 12050; return OK; }
EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) { return nvmlSystemGetCudaDriverVersion(v); }
EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *c) { return nvmlDeviceGetCount_v2(c); }
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int i, nvmlDevice_t *d) { return nvmlDeviceGetHandleByIndex_v2(i, d); }
EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t d, unsigned int *i) { CHECK(d, i, 0); *i = d->index; return OK; }
EXPORT nvmlReturn_t nvmlDeviceGetNumFans(nvmlDevice_t d, unsigned int *n) { CHECK(d, n, 0); *n = 1; return OK; }
EXPORT nvmlReturn_t nvmlDeviceGetFanSpeed_v2(nvmlDevice_t d, unsigned int fan, unsigned int *s) {
    CHECK(d, s, 0);
    if (fan != 0) return E_ARG;
    *s = 41;
    return OK;
}
EXPORT nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t d, unsigned int *s) { return nvmlDeviceGetFanSpeed_v2(d, 0, s); }
EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type, unsigned int *mhz) { return nvmlDeviceGetClockInfo(d, type, mhz); }
EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t d, unsigned int *mw) { return nvmlDeviceGetEnforcedPowerLimit(d, mw); }
EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t d, unsigned int *c, nvmlProcessInfo_t *p) { return list_procs(d, c, p, 0); }
EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t d, unsigned int *c, nvmlProcessInfo_t *p) { return list_procs(d, c, p, 1); }
/* Present but "not supported": pynvml callers treat NOT_SUPPORTED as N/A, while a missing symbol
 * (FUNCTION_NOT_FOUND) makes nvitop print tracebacks (monitor.md section 3.2). Arguments are
 * ignored, which is safe with the C calling convention. */
#define NOT_SUPPORTED(name) EXPORT nvmlReturn_t name(void) { return E_NOT_SUPPORTED; }
NOT_SUPPORTED(nvmlDeviceGetComputeMode)
NOT_SUPPORTED(nvmlDeviceGetDecoderUtilization)
NOT_SUPPORTED(nvmlDeviceGetEncoderUtilization)
NOT_SUPPORTED(nvmlDeviceGetDisplayActive)
NOT_SUPPORTED(nvmlDeviceGetDriverModel)
NOT_SUPPORTED(nvmlDeviceGetDriverModel_v2)
NOT_SUPPORTED(nvmlDeviceGetPerformanceState)
NOT_SUPPORTED(nvmlDeviceGetPersistenceMode)
NOT_SUPPORTED(nvmlDeviceGetProcessUtilization)
NOT_SUPPORTED(nvmlDeviceGetTotalEccErrors)
NOT_SUPPORTED(nvmlDeviceGetPciInfo_v3)
NOT_SUPPORTED(nvmlDeviceGetMigMode)
NOT_SUPPORTED(nvmlDeviceGetTemperatureThreshold)
NOT_SUPPORTED(nvmlDeviceGetCurrPcieLinkGeneration)
NOT_SUPPORTED(nvmlDeviceGetCurrPcieLinkWidth)
NOT_SUPPORTED(nvmlDeviceGetMaxPcieLinkGeneration)
NOT_SUPPORTED(nvmlDeviceGetMaxPcieLinkWidth)
