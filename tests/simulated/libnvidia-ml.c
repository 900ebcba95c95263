/*
 * Copyright: (c) 2026, gpufleet.exo contributors
 * GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
 *
 * A simulated libnvidia-ml.so.1 for tests. It exports a subset of NVML's C API with the
 * signatures, struct layouts and return codes of nvml.h, so the real nvidia-ml-py (pynvml)
 * can load it in place of NVIDIA's library. What it reports comes from a line-based file named
 * by the environment variable SIMULATED_NVML_CONFIG, else /etc/simulated-nvml.conf (the
 * simulated host's own, as a real driver's state belongs to the host, not to a process), read
 * when the library goes from uninitialized to initialized (so a process can init, shut down and
 * init again with another file). tests/simulated/nvml.py writes that file; its docstring
 * describes the format.
 *
 * Compiled with -DSIMULATED_NVML_LEGACY it omits the symbols an R418-era driver lacks, so
 * pynvml raises NVMLError_FunctionNotFound for them as it does on such hosts.
 *
 * Plain C11 + POSIX, no dependencies: it must also load inside a minimal Debian container.
 */
#define _POSIX_C_SOURCE 200809L

#define HOST_CONFIG "/etc/simulated-nvml.conf"
#define HOST_EVENTS "/etc/simulated-nvml.events"

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "percent.h"

#define API __attribute__((visibility("default")))

/* ---- nvml.h types and constants (values as in nvml.h) ---------------------------------- */

typedef enum nvmlReturn_enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_ALREADY_INITIALIZED = 5,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_INSUFFICIENT_POWER = 8,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_IRQ_ISSUE = 11,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_CORRUPTED_INFOROM = 14,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_OPERATING_SYSTEM = 17,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_IN_USE = 19,
    NVML_ERROR_MEMORY = 20,
    NVML_ERROR_NO_DATA = 21,
    NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
    NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
    NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_DEPRECATED = 26,
    NVML_ERROR_NOT_READY = 27,
    NVML_ERROR_GPU_NOT_FOUND = 28,
    NVML_ERROR_INVALID_STATE = 29,
    NVML_ERROR_RESET_TYPE_NOT_SUPPORTED = 30,
    NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

typedef enum nvmlClockType_enum {
    NVML_CLOCK_GRAPHICS = 0,
    NVML_CLOCK_SM = 1,
    NVML_CLOCK_MEM = 2,
    NVML_CLOCK_VIDEO = 3,
    NVML_CLOCK_COUNT
} nvmlClockType_t;

typedef unsigned int nvmlDeviceArchitecture_t;
#define NVML_DEVICE_ARCH_UNKNOWN 0xffffffffu

#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16
#define NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT "%04X:%02X:%02X.0"
#define NVML_DEVICE_PCI_BUS_ID_FMT "%08X:%02X:%02X.0"
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96

typedef struct nvmlPciInfo_st {
    char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

typedef struct nvmlMemory_st {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlMemory_v2_st {
    unsigned int version;
    unsigned long long total;
    unsigned long long reserved;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_v2_t;

/* NVML_STRUCT_VERSION(Memory, 2): sizeof the struct | version << 24 */
#define nvmlMemory_v2 ((unsigned int)(sizeof(nvmlMemory_v2_t) | (2u << 24)))

#define NVML_INIT_FLAG_NO_GPUS 1u

typedef unsigned int nvmlEnableState_t;
typedef unsigned int nvmlComputeMode_t;
typedef unsigned int nvmlMemoryErrorType_t; /* 0 corrected, 1 uncorrected */
typedef unsigned int nvmlEccCounterType_t;  /* 0 volatile, 1 aggregate */
typedef unsigned int nvmlTemperatureSensors_t;
#define NVML_TEMPERATURE_GPU 0u
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1u
#define NVML_VOLATILE_ECC 0u
#define NVML_GPU_FABRIC_UUID_LEN 16

typedef struct {
    unsigned int version;
    unsigned char clusterUuid[NVML_GPU_FABRIC_UUID_LEN];
    nvmlReturn_t status;
    unsigned int cliqueId;
    unsigned int state;
    unsigned int healthMask;
} nvmlGpuFabricInfo_v2_t;

/* NVML_STRUCT_VERSION(GpuFabricInfo, 2) */
#define nvmlGpuFabricInfo_v2 ((unsigned int)(sizeof(nvmlGpuFabricInfo_v2_t) | (2u << 24)))

/* ---- simulated state -------------------------------------------------------------------- */

#define MAX_GPUS 64
#define MAX_MIG_DEVICES 8
#define MAX_ERROR_RULES 64
#define AFFINITY_WORDS 64 /* 4096 CPUs */
#define FUNCTION_NAME_SIZE 128
#define ANY_GPU (-1)
#define MAX_EVENT_SETS 16
#define EVENT_QUEUE 256
/* nvmlEventTypeDoubleBitEccError | nvmlEventTypeXidCriticalError: what data center parts deliver */
#define EVENT_DOUBLE_BIT_ECC 0x2ull
#define EVENT_XID 0x8ull
#define DEFAULT_EVENT_TYPES (EVENT_DOUBLE_BIT_ECC | EVENT_XID)

/* One structure for both kinds of handle: a full GPU or a MIG device (is_mig). */
struct nvmlDevice_st {
    int is_mig;
    unsigned int gpu_index; /* for a MIG device, its parent's index */
    char name[256];
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    unsigned long long memory_mib;
    /* full GPU: memory held by processes, and those processes as "pid:MiB,pid:MiB" */
    unsigned long long memory_used_mib;
    char processes[1024];
    unsigned int pci_domain, pci_bus, pci_device;
    unsigned int pci_device_id, pci_subsystem_id;
    unsigned int minor;
    int cc_major, cc_minor;
    unsigned int architecture;
    int has_cores;
    unsigned int cores;
    int has_sm_clock;
    unsigned int sm_clock_mhz;
    int has_numa_node;
    int numa_node;
    int has_cpu_affinity;
    unsigned long cpu_affinity[AFFINITY_WORDS];
    int mig_capable;
    unsigned int mig_current, mig_pending, mig_max_devices, mig_count;
    /* MIG device */
    unsigned int gpu_instance_id, compute_instance_id;
    /* health (full GPU); a group whose has_ flag is 0 answers NOT_SUPPORTED */
    int has_ecc;
    unsigned int ecc_current, ecc_pending;
    unsigned long long ecc_uncorrected_volatile, ecc_uncorrected_aggregate;
    int has_retired_pages;
    unsigned int retired_pages_pending;
    int has_remapped_rows;
    unsigned int remapped_correctable, remapped_uncorrectable, remapped_pending, remapped_failed;
    int has_persistence_mode;
    unsigned int persistence_mode;
    int has_compute_mode;
    unsigned int compute_mode;
    int has_pcie;
    unsigned int pcie_gen, pcie_max_gen, pcie_width, pcie_max_width;
    int has_temperature;
    unsigned int temperature_c;
    int has_clock_events;
    unsigned long long clock_event_reasons;
    int has_fabric;
    unsigned int fabric_state, fabric_status, fabric_clique_id;
    /* NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, where the driver reports it */
    int has_recovery_action;
    unsigned int recovery_action;
    /* the events the GPU supports (nvmlEventType*), and whether it fell off the bus */
    unsigned long long event_types;
    unsigned int lost;
};

typedef struct nvmlDevice_st *nvmlDevice_t;

struct error_rule {
    char function[FUNCTION_NAME_SIZE];
    int gpu_index; /* ANY_GPU or an index */
    nvmlReturn_t code;
};

struct config {
    int loaded;
    char driver_version[80];
    char nvml_version[80];
    int cuda_version;
    nvmlReturn_t init_error;
    char hang_in[FUNCTION_NAME_SIZE];
    char crash_in[FUNCTION_NAME_SIZE];
    struct error_rule rules[MAX_ERROR_RULES];
    unsigned int rule_count;
    unsigned int gpu_count;
};

static struct config cfg;
static struct nvmlDevice_st gpus[MAX_GPUS];
static struct nvmlDevice_st migs[MAX_GPUS][MAX_MIG_DEVICES];
static unsigned int init_count;

/* ---- error codes ------------------------------------------------------------------------ */

static const struct {
    nvmlReturn_t code;
    const char *name; /* NVML_ERROR_<name>, as the config file spells it */
    const char *text; /* what nvmlErrorString returns */
} ERRORS[] = {
    {NVML_SUCCESS, "SUCCESS", "Success"},
    {NVML_ERROR_UNINITIALIZED, "UNINITIALIZED", "Uninitialized"},
    {NVML_ERROR_INVALID_ARGUMENT, "INVALID_ARGUMENT", "Invalid Argument"},
    {NVML_ERROR_NOT_SUPPORTED, "NOT_SUPPORTED", "Not Supported"},
    {NVML_ERROR_NO_PERMISSION, "NO_PERMISSION", "Insufficient Permissions"},
    {NVML_ERROR_ALREADY_INITIALIZED, "ALREADY_INITIALIZED", "Already Initialized"},
    {NVML_ERROR_NOT_FOUND, "NOT_FOUND", "Not Found"},
    {NVML_ERROR_INSUFFICIENT_SIZE, "INSUFFICIENT_SIZE", "Insufficient Size"},
    {NVML_ERROR_INSUFFICIENT_POWER, "INSUFFICIENT_POWER", "Insufficient External Power"},
    {NVML_ERROR_DRIVER_NOT_LOADED, "DRIVER_NOT_LOADED", "Driver Not Loaded"},
    {NVML_ERROR_TIMEOUT, "TIMEOUT", "Timeout"},
    {NVML_ERROR_IRQ_ISSUE, "IRQ_ISSUE", "Interrupt request issue"},
    {NVML_ERROR_LIBRARY_NOT_FOUND, "LIBRARY_NOT_FOUND", "NVML Shared Library Not Found"},
    {NVML_ERROR_FUNCTION_NOT_FOUND, "FUNCTION_NOT_FOUND", "Function Not Found"},
    {NVML_ERROR_CORRUPTED_INFOROM, "CORRUPTED_INFOROM", "Corrupted infoROM"},
    {NVML_ERROR_GPU_IS_LOST, "GPU_IS_LOST", "GPU is lost"},
    {NVML_ERROR_RESET_REQUIRED, "RESET_REQUIRED", "GPU requires restart"},
    {NVML_ERROR_OPERATING_SYSTEM, "OPERATING_SYSTEM", "The operating system has blocked the request."},
    {NVML_ERROR_LIB_RM_VERSION_MISMATCH, "LIB_RM_VERSION_MISMATCH", "RM has detected an NVML/RM version mismatch."},
    {NVML_ERROR_IN_USE, "IN_USE", "In use by another client"},
    {NVML_ERROR_MEMORY, "MEMORY", "Insufficient Memory"},
    {NVML_ERROR_NO_DATA, "NO_DATA", "No data"},
    {NVML_ERROR_VGPU_ECC_NOT_SUPPORTED, "VGPU_ECC_NOT_SUPPORTED", "The requested vgpu operation is not available on target device, because ECC is enabled"},
    {NVML_ERROR_INSUFFICIENT_RESOURCES, "INSUFFICIENT_RESOURCES", "Ran out of critical resources, other than memory"},
    {NVML_ERROR_FREQ_NOT_SUPPORTED, "FREQ_NOT_SUPPORTED", "The requested frequency is not supported"},
    {NVML_ERROR_ARGUMENT_VERSION_MISMATCH, "ARGUMENT_VERSION_MISMATCH", "The provided version is invalid/unsupported"},
    {NVML_ERROR_DEPRECATED, "DEPRECATED", "The requested functionality has been deprecated"},
    {NVML_ERROR_NOT_READY, "NOT_READY", "The system is not ready for the request"},
    {NVML_ERROR_GPU_NOT_FOUND, "GPU_NOT_FOUND", "No GPUs were found"},
    {NVML_ERROR_INVALID_STATE, "INVALID_STATE", "Resource not in correct state to perform requested operation"},
    {NVML_ERROR_RESET_TYPE_NOT_SUPPORTED, "RESET_TYPE_NOT_SUPPORTED", "Reset not supported for given device/parameters"},
    {NVML_ERROR_UNKNOWN, "UNKNOWN", "Unknown Error"},
};

#define COUNT_OF(array) (sizeof(array) / sizeof((array)[0]))

static int error_code_by_name(const char *name, nvmlReturn_t *code)
{
    size_t i;
    for (i = 0; i < COUNT_OF(ERRORS); i++) {
        if (strcmp(ERRORS[i].name, name) == 0) {
            *code = ERRORS[i].code;
            return 0;
        }
    }
    return -1;
}

/* ---- config file ------------------------------------------------------------------------ */

enum field_kind { F_STRING, F_UINT, F_INT, F_ULL, F_PCI_BUS_ID, F_CC, F_CPULIST, F_ERROR, F_ERROR_RULE };

#define NO_FLAG ((size_t)-1)

struct field {
    const char *key;
    enum field_kind kind;
    size_t offset;
    size_t size;
    size_t present; /* offset of an int set to 1 when the key appears, or NO_FLAG */
};

#define DEVICE_FIELD(key, kind, member, present) \
    {key, kind, offsetof(struct nvmlDevice_st, member), sizeof(((struct nvmlDevice_st *)0)->member), present}
#define DEVICE_FLAG(member) offsetof(struct nvmlDevice_st, member)
#define CONFIG_FIELD(key, kind, member) \
    {key, kind, offsetof(struct config, member), sizeof(((struct config *)0)->member), NO_FLAG}

static const struct field CONFIG_FIELDS[] = {
    CONFIG_FIELD("driver_version", F_STRING, driver_version),
    CONFIG_FIELD("nvml_version", F_STRING, nvml_version),
    CONFIG_FIELD("cuda_version", F_INT, cuda_version),
    CONFIG_FIELD("init_error", F_ERROR, init_error),
    CONFIG_FIELD("hang_in", F_STRING, hang_in),
    CONFIG_FIELD("crash_in", F_STRING, crash_in),
    CONFIG_FIELD("error", F_ERROR_RULE, rules),
};

static const struct field GPU_FIELDS[] = {
    DEVICE_FIELD("name", F_STRING, name, NO_FLAG),
    DEVICE_FIELD("uuid", F_STRING, uuid, NO_FLAG),
    DEVICE_FIELD("memory_mib", F_ULL, memory_mib, NO_FLAG),
    DEVICE_FIELD("memory_used_mib", F_ULL, memory_used_mib, NO_FLAG),
    DEVICE_FIELD("processes", F_STRING, processes, NO_FLAG),
    DEVICE_FIELD("pci_bus_id", F_PCI_BUS_ID, pci_domain, NO_FLAG),
    DEVICE_FIELD("pci_device_id", F_UINT, pci_device_id, NO_FLAG),
    DEVICE_FIELD("pci_subsystem_id", F_UINT, pci_subsystem_id, NO_FLAG),
    DEVICE_FIELD("minor", F_UINT, minor, NO_FLAG),
    DEVICE_FIELD("compute_capability", F_CC, cc_major, NO_FLAG),
    DEVICE_FIELD("architecture", F_UINT, architecture, NO_FLAG),
    DEVICE_FIELD("cores", F_UINT, cores, DEVICE_FLAG(has_cores)),
    DEVICE_FIELD("max_sm_clock_mhz", F_UINT, sm_clock_mhz, DEVICE_FLAG(has_sm_clock)),
    DEVICE_FIELD("numa_node", F_INT, numa_node, DEVICE_FLAG(has_numa_node)),
    DEVICE_FIELD("cpu_affinity", F_CPULIST, cpu_affinity, DEVICE_FLAG(has_cpu_affinity)),
    DEVICE_FIELD("mig_current", F_UINT, mig_current, DEVICE_FLAG(mig_capable)),
    DEVICE_FIELD("mig_pending", F_UINT, mig_pending, DEVICE_FLAG(mig_capable)),
    DEVICE_FIELD("mig_max_devices", F_UINT, mig_max_devices, NO_FLAG),
    DEVICE_FIELD("ecc_current", F_UINT, ecc_current, DEVICE_FLAG(has_ecc)),
    DEVICE_FIELD("ecc_pending", F_UINT, ecc_pending, DEVICE_FLAG(has_ecc)),
    DEVICE_FIELD("ecc_uncorrected_volatile", F_ULL, ecc_uncorrected_volatile, DEVICE_FLAG(has_ecc)),
    DEVICE_FIELD("ecc_uncorrected_aggregate", F_ULL, ecc_uncorrected_aggregate, DEVICE_FLAG(has_ecc)),
    DEVICE_FIELD("retired_pages_pending", F_UINT, retired_pages_pending, DEVICE_FLAG(has_retired_pages)),
    DEVICE_FIELD("remapped_correctable", F_UINT, remapped_correctable, DEVICE_FLAG(has_remapped_rows)),
    DEVICE_FIELD("remapped_uncorrectable", F_UINT, remapped_uncorrectable, DEVICE_FLAG(has_remapped_rows)),
    DEVICE_FIELD("remapped_pending", F_UINT, remapped_pending, DEVICE_FLAG(has_remapped_rows)),
    DEVICE_FIELD("remapped_failed", F_UINT, remapped_failed, DEVICE_FLAG(has_remapped_rows)),
    DEVICE_FIELD("persistence_mode", F_UINT, persistence_mode, DEVICE_FLAG(has_persistence_mode)),
    DEVICE_FIELD("compute_mode", F_UINT, compute_mode, DEVICE_FLAG(has_compute_mode)),
    DEVICE_FIELD("pcie_gen", F_UINT, pcie_gen, DEVICE_FLAG(has_pcie)),
    DEVICE_FIELD("pcie_max_gen", F_UINT, pcie_max_gen, DEVICE_FLAG(has_pcie)),
    DEVICE_FIELD("pcie_width", F_UINT, pcie_width, DEVICE_FLAG(has_pcie)),
    DEVICE_FIELD("pcie_max_width", F_UINT, pcie_max_width, DEVICE_FLAG(has_pcie)),
    DEVICE_FIELD("temperature_c", F_UINT, temperature_c, DEVICE_FLAG(has_temperature)),
    DEVICE_FIELD("clock_event_reasons", F_ULL, clock_event_reasons, DEVICE_FLAG(has_clock_events)),
    DEVICE_FIELD("fabric_state", F_UINT, fabric_state, DEVICE_FLAG(has_fabric)),
    DEVICE_FIELD("fabric_status", F_UINT, fabric_status, DEVICE_FLAG(has_fabric)),
    DEVICE_FIELD("fabric_clique_id", F_UINT, fabric_clique_id, DEVICE_FLAG(has_fabric)),
    DEVICE_FIELD("recovery_action", F_UINT, recovery_action, DEVICE_FLAG(has_recovery_action)),
    DEVICE_FIELD("event_types", F_ULL, event_types, NO_FLAG),
    DEVICE_FIELD("lost", F_UINT, lost, NO_FLAG),
};

static const struct field MIG_FIELDS[] = {
    DEVICE_FIELD("name", F_STRING, name, NO_FLAG),
    DEVICE_FIELD("uuid", F_STRING, uuid, NO_FLAG),
    DEVICE_FIELD("memory_mib", F_ULL, memory_mib, NO_FLAG),
    DEVICE_FIELD("gpu_instance_id", F_UINT, gpu_instance_id, NO_FLAG),
    DEVICE_FIELD("compute_instance_id", F_UINT, compute_instance_id, NO_FLAG),
};

static int parse_ull(const char *s, unsigned long long max, unsigned long long *out)
{
    char *end;
    unsigned long long v;
    if (*s == '\0' || *s == '-') return -1;
    v = strtoull(s, &end, 0);
    if (*end != '\0' || v > max) return -1;
    *out = v;
    return 0;
}

static int parse_int(const char *s, int *out)
{
    char *end;
    long v;
    if (*s == '\0') return -1;
    v = strtol(s, &end, 0);
    if (*end != '\0' || v < -2147483647L - 1 || v > 2147483647L) return -1;
    *out = (int)v;
    return 0;
}

/* The sysfs cpulist form, e.g. "0-31,64-95". */
static int parse_cpulist(const char *s, unsigned long *mask)
{
    const unsigned long bits = 8 * sizeof(unsigned long);
    memset(mask, 0, AFFINITY_WORDS * sizeof(unsigned long));
    while (*s) {
        char *end;
        unsigned long first, last, cpu;
        first = strtoul(s, &end, 10);
        if (end == s) return -1;
        last = first;
        s = end;
        if (*s == '-') {
            last = strtoul(s + 1, &end, 10);
            if (end == s + 1) return -1;
            s = end;
        }
        if (first > last || last >= AFFINITY_WORDS * bits) return -1;
        for (cpu = first; cpu <= last; cpu++) mask[cpu / bits] |= 1ul << (cpu % bits);
        if (*s == ',') s++;
        else if (*s) return -1;
    }
    return 0;
}

/* "<function> <gpu index or *> <ERROR_NAME>" */
static int parse_error_rule(const char *s)
{
    struct error_rule *rule;
    char gpu[16], code[64];
    int consumed = 0;
    unsigned long long index;
    if (cfg.rule_count >= MAX_ERROR_RULES) return -1;
    rule = &cfg.rules[cfg.rule_count];
    if (sscanf(s, "%127s %15s %63s%n", rule->function, gpu, code, &consumed) != 3 || s[consumed] != '\0')
        return -1;
    if (strcmp(gpu, "*") == 0) rule->gpu_index = ANY_GPU;
    else if (parse_ull(gpu, MAX_GPUS - 1, &index) == 0) rule->gpu_index = (int)index;
    else return -1;
    if (error_code_by_name(code, &rule->code) != 0) return -1;
    cfg.rule_count++;
    return 0;
}

static int set_field(const struct field *f, void *base, const char *value)
{
    char *target = (char *)base + f->offset;
    unsigned long long ull;
    unsigned int domain, bus, device, function;
    int consumed = 0;

    switch (f->kind) {
    case F_STRING:
        if (percent_decode(value, target, f->size) != 0) return -1;
        break;
    case F_UINT:
        if (parse_ull(value, 0xffffffffull, &ull) != 0) return -1;
        *(unsigned int *)target = (unsigned int)ull;
        break;
    case F_INT:
        if (parse_int(value, (int *)target) != 0) return -1;
        break;
    case F_ULL:
        if (parse_ull(value, ~0ull >> 20, &ull) != 0) return -1;
        *(unsigned long long *)target = ull;
        break;
    case F_PCI_BUS_ID: {
        struct nvmlDevice_st *d = base;
        if (sscanf(value, "%x:%x:%x.%x%n", &domain, &bus, &device, &function, &consumed) != 4 ||
            value[consumed] != '\0' || bus > 0xff || device > 0x1f || function > 7)
            return -1;
        d->pci_domain = domain;
        d->pci_bus = bus;
        d->pci_device = device;
        break;
    }
    case F_CC: {
        struct nvmlDevice_st *d = base;
        if (sscanf(value, "%d.%d%n", &d->cc_major, &d->cc_minor, &consumed) != 2 || value[consumed] != '\0')
            return -1;
        break;
    }
    case F_CPULIST:
        if (parse_cpulist(value, (unsigned long *)target) != 0) return -1;
        break;
    case F_ERROR:
        if (error_code_by_name(value, (nvmlReturn_t *)target) != 0) return -1;
        break;
    case F_ERROR_RULE:
        if (parse_error_rule(value) != 0) return -1;
        break;
    }
    if (f->present != NO_FLAG) *(int *)((char *)base + f->present) = 1;
    return 0;
}

static const struct field *find_field(const struct field *fields, size_t count, const char *key)
{
    size_t i;
    for (i = 0; i < count; i++)
        if (strcmp(fields[i].key, key) == 0) return &fields[i];
    return NULL;
}

static void reset_state(void)
{
    memset(&cfg, 0, sizeof cfg);
    memset(gpus, 0, sizeof gpus);
    memset(migs, 0, sizeof migs);
    /* A host with the driver loaded and no GPUs: what an absent config means. */
    strcpy(cfg.driver_version, "550.54.15");
    strcpy(cfg.nvml_version, "12.550.54.15");
    cfg.cuda_version = 12040;
}

static int config_error(const char *path, unsigned int line, const char *what, const char *text)
{
    fprintf(stderr, "simulated NVML: %s:%u: %s: %s\n", path, line, what, text);
    return -1;
}

static int parse_config(FILE *f, const char *path)
{
    char line[8192];
    unsigned int lineno = 0;
    struct nvmlDevice_st *gpu = NULL, *mig = NULL;

    while (fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        char *eq;
        const struct field *field;
        lineno++;
        if (len > 0 && line[len - 1] == '\n') line[--len] = '\0';
        else if (!feof(f)) return config_error(path, lineno, "line too long", "");
        if (len > 0 && line[len - 1] == '\r') line[--len] = '\0';
        if (len == 0 || line[0] == '#') continue;

        if (strcmp(line, "[gpu]") == 0) {
            if (cfg.gpu_count >= MAX_GPUS) return config_error(path, lineno, "too many GPUs", line);
            gpu = &gpus[cfg.gpu_count];
            gpu->gpu_index = cfg.gpu_count++;
            gpu->minor = gpu->gpu_index;
            gpu->architecture = NVML_DEVICE_ARCH_UNKNOWN;
            gpu->mig_max_devices = 7;
            gpu->event_types = DEFAULT_EVENT_TYPES;
            mig = NULL;
            continue;
        }
        if (strcmp(line, "[mig]") == 0) {
            if (!gpu) return config_error(path, lineno, "[mig] outside a [gpu] section", line);
            if (gpu->mig_count >= MAX_MIG_DEVICES)
                return config_error(path, lineno, "too many MIG devices", line);
            mig = &migs[gpu->gpu_index][gpu->mig_count++];
            mig->is_mig = 1;
            mig->gpu_index = gpu->gpu_index;
            continue;
        }

        eq = strchr(line, '=');
        if (!eq) return config_error(path, lineno, "expected key=value or a [section]", line);
        *eq = '\0';
        if (mig) field = find_field(MIG_FIELDS, COUNT_OF(MIG_FIELDS), line);
        else if (gpu) field = find_field(GPU_FIELDS, COUNT_OF(GPU_FIELDS), line);
        else field = find_field(CONFIG_FIELDS, COUNT_OF(CONFIG_FIELDS), line);
        if (!field) return config_error(path, lineno, "unknown key in this section", line);
        if (set_field(field, mig ? (void *)mig : gpu ? (void *)gpu : (void *)&cfg, eq + 1) != 0)
            return config_error(path, lineno, "bad value", eq + 1);
    }
    return 0;
}

/* ---- events (the fault-injection kit) ----------------------------------------------------
 * A file, named by SIMULATED_NVML_EVENTS (else /etc/simulated-nvml.events), that a test or an
 * operator appends lines to while a process has the library loaded:
 *   xid <gpu index> <xid>             an XID critical error event
 *   ecc_double_bit <gpu index>        a double-bit ECC error event
 *   set <gpu index> <key>=<value>     any [gpu] key of the config: health answers, recovery_action,
 *                                     lost=1 (every call about the GPU answers GPU_IS_LOST), lost=0
 * The library reads new complete lines at every call. At init it replays the whole file's "set"
 * lines (the host's state is their sum) and skips its events: an event reaches the processes
 * that have the library loaded when it is written. Events go to every event set registered for
 * the GPU and the event's type. */

struct event {
    unsigned int gpu_index;
    unsigned long long type, data;
};

struct nvmlEventSet_st {
    int used;
    unsigned long long types[MAX_GPUS];
    struct event queue[EVENT_QUEUE];
    unsigned int head, count;
};

typedef struct nvmlEventSet_st *nvmlEventSet_t;

static struct nvmlEventSet_st event_sets[MAX_EVENT_SETS];
static char events_path[4096];
static long events_offset;
static pthread_mutex_t events_lock = PTHREAD_MUTEX_INITIALIZER;

static void deliver(unsigned int gpu_index, unsigned long long type, unsigned long long data)
{
    unsigned int i;
    for (i = 0; i < MAX_EVENT_SETS; i++) {
        struct nvmlEventSet_st *set = &event_sets[i];
        if (!set->used || !(set->types[gpu_index] & type) || set->count == EVENT_QUEUE) continue;
        set->queue[(set->head + set->count++) % EVENT_QUEUE] = (struct event){gpu_index, type, data};
    }
}

static int apply_event_line(char *line, int replaying)
{
    char verb[32], rest[512];
    unsigned int index;
    unsigned long long value = 0;
    int fields = sscanf(line, "%31s %u %511[^\n]", verb, &index, rest);
    if (fields < 2 || index >= cfg.gpu_count) return -1;
    if (strcmp(verb, "set") == 0) {
        char *eq = fields == 3 ? strchr(rest, '=') : NULL;
        const struct field *field;
        if (!eq) return -1;
        *eq = '\0';
        field = find_field(GPU_FIELDS, COUNT_OF(GPU_FIELDS), rest);
        return field ? set_field(field, &gpus[index], eq + 1) : -1;
    }
    if (strcmp(verb, "xid") == 0 && fields == 3 && parse_ull(rest, 0xffffffffull, &value) == 0) {
        if (!replaying) deliver(index, EVENT_XID, value);
        return 0;
    }
    if (strcmp(verb, "ecc_double_bit") == 0 && fields == 2) {
        if (!replaying) deliver(index, EVENT_DOUBLE_BIT_ECC, 0);
        return 0;
    }
    return -1;
}

/* Reads the complete lines written since the last read; a bad line is reported and skipped. */
static void read_events(int replaying)
{
    struct stat st;
    FILE *f;
    char line[1024];
    if (!events_path[0] || stat(events_path, &st) != 0 || st.st_size <= events_offset) return;
    f = fopen(events_path, "r");
    if (!f) return;
    fseek(f, events_offset, SEEK_SET);
    while (fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        if (len == 0 || line[len - 1] != '\n') break; /* a line still being written */
        events_offset += (long)len;
        if (line[0] == '#' || line[0] == '\n') continue;
        if (apply_event_line(line, replaying) != 0)
            fprintf(stderr, "simulated NVML: %s: ignored: %s", events_path, line);
    }
    fclose(f);
}

static void poll_events(void)
{
    if (!events_path[0]) return;
    pthread_mutex_lock(&events_lock);
    read_events(0);
    pthread_mutex_unlock(&events_lock);
}

static nvmlReturn_t replay_events(void)
{
    const char *path = getenv("SIMULATED_NVML_EVENTS");
    pthread_mutex_lock(&events_lock);
    memset(event_sets, 0, sizeof event_sets);
    events_offset = 0;
    snprintf(events_path, sizeof events_path, "%s", path && *path ? path : HOST_EVENTS);
    read_events(1);
    pthread_mutex_unlock(&events_lock);
    return NVML_SUCCESS;
}

static nvmlReturn_t load_config(void)
{
    const char *path = getenv("SIMULATED_NVML_CONFIG");
    FILE *f;
    int bad;

    reset_state();
    cfg.loaded = 1;
    if (!path || !*path) {
        if (access(HOST_CONFIG, R_OK) != 0) return NVML_SUCCESS;
        path = HOST_CONFIG;
    }
    f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "simulated NVML: cannot read SIMULATED_NVML_CONFIG=%s; simulating a host with no GPUs\n",
                path);
        return NVML_SUCCESS;
    }
    bad = parse_config(f, path);
    fclose(f);
    if (bad) {
        /* A half-read file would simulate something nobody asked for. */
        reset_state();
        return NVML_ERROR_UNKNOWN;
    }
    return replay_events();
}

/* ---- fault injection -------------------------------------------------------------------- */

static void hang(void)
{
    /* Like a driver call stuck on a GPU that fell off the bus: only SIGKILL ends it. */
    struct sigaction ignore;
    memset(&ignore, 0, sizeof ignore);
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGTERM, &ignore, NULL);
    sigaction(SIGINT, &ignore, NULL);
    sigaction(SIGHUP, &ignore, NULL);
    for (;;) pause();
}

static void crash(void)
{
    /* A real invalid access, not raise(): the volatile pointer keeps the compiler from
     * turning a known NULL store into a trap instruction (SIGILL). */
    int *volatile nowhere = NULL;
    signal(SIGSEGV, SIG_DFL);
    *nowhere = 1;
    raise(SIGSEGV);
}

static nvmlReturn_t injected(const char *function, int gpu_index)
{
    unsigned int i;
    if (!cfg.loaded) return NVML_SUCCESS;
    if (strcmp(cfg.hang_in, function) == 0) hang();
    if (strcmp(cfg.crash_in, function) == 0) crash();
    for (i = 0; i < cfg.rule_count; i++) {
        const struct error_rule *rule = &cfg.rules[i];
        if (strcmp(rule->function, function) == 0 &&
            (rule->gpu_index == ANY_GPU || rule->gpu_index == gpu_index))
            return rule->code;
    }
    return NVML_SUCCESS;
}

/* ---- handles ---------------------------------------------------------------------------- */

/* Handles are addresses inside the static tables; anything else is an invalid argument, found
 * without dereferencing it. */
static struct nvmlDevice_st *lookup(nvmlDevice_t handle)
{
    uintptr_t p = (uintptr_t)handle;
    uintptr_t base = (uintptr_t)gpus;
    size_t size = sizeof(struct nvmlDevice_st);

    if (p >= base && p < base + sizeof gpus && (p - base) % size == 0) {
        size_t i = (p - base) / size;
        return i < cfg.gpu_count ? &gpus[i] : NULL;
    }
    base = (uintptr_t)migs;
    if (p >= base && p < base + sizeof migs && (p - base) % size == 0) {
        size_t i = (p - base) / size, g = i / MAX_MIG_DEVICES, m = i % MAX_MIG_DEVICES;
        return g < cfg.gpu_count && m < gpus[g].mig_count ? &migs[g][m] : NULL;
    }
    return NULL;
}

/* The physical GPU behind a handle: PCI, NUMA, clocks and the like belong to it. */
static struct nvmlDevice_st *physical(struct nvmlDevice_st *d)
{
    return &gpus[d->gpu_index];
}

static nvmlReturn_t enter(const char *function, int gpu_index)
{
    if (!init_count) return NVML_ERROR_UNINITIALIZED;
    poll_events();
    return injected(function, gpu_index);
}

static nvmlReturn_t enter_device(const char *function, nvmlDevice_t handle, struct nvmlDevice_st **out)
{
    if (!init_count) return NVML_ERROR_UNINITIALIZED;
    poll_events();
    *out = lookup(handle);
    if (!*out) return NVML_ERROR_INVALID_ARGUMENT;
    if (physical(*out)->lost) return NVML_ERROR_GPU_IS_LOST;
    return injected(function, (int)(*out)->gpu_index);
}

static nvmlReturn_t copy_string(const char *value, char *buffer, unsigned int length)
{
    if (!buffer) return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(value) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(buffer, value, strlen(value) + 1);
    return NVML_SUCCESS;
}

#define CHECK(call)                           \
    do {                                      \
        nvmlReturn_t check_rc_ = (call);      \
        if (check_rc_ != NVML_SUCCESS)        \
            return check_rc_;                 \
    } while (0)

/* ---- init and system -------------------------------------------------------------------- */

static nvmlReturn_t initialize(const char *function, unsigned int flags)
{
    (void)flags; /* an absent GPU never fails init here: the no-GPU host inits fine */
    if (init_count == 0) CHECK(load_config());
    CHECK(injected(function, ANY_GPU));
    if (init_count == 0 && cfg.init_error != NVML_SUCCESS) return cfg.init_error;
    init_count++;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlInit(void) { return initialize(__func__, 0); }
API nvmlReturn_t nvmlInit_v2(void) { return initialize(__func__, 0); }
API nvmlReturn_t nvmlInitWithFlags(unsigned int flags) { return initialize(__func__, flags); }

API nvmlReturn_t nvmlShutdown(void)
{
    CHECK(enter(__func__, ANY_GPU));
    init_count--;
    return NVML_SUCCESS;
}

API const char *nvmlErrorString(nvmlReturn_t result)
{
    size_t i;
    for (i = 0; i < COUNT_OF(ERRORS); i++)
        if (ERRORS[i].code == result) return ERRORS[i].text;
    return "Unknown Error";
}

API nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    CHECK(enter(__func__, ANY_GPU));
    return copy_string(cfg.driver_version, version, length);
}

API nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
    CHECK(enter(__func__, ANY_GPU));
    return copy_string(cfg.nvml_version, version, length);
}

static nvmlReturn_t cuda_driver_version(const char *function, int *version)
{
    CHECK(enter(function, ANY_GPU));
    if (!version) return NVML_ERROR_INVALID_ARGUMENT;
    *version = cfg.cuda_version;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *version) { return cuda_driver_version(__func__, version); }

#ifndef SIMULATED_NVML_LEGACY
API nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *version) { return cuda_driver_version(__func__, version); }
#endif

/* ---- finding devices -------------------------------------------------------------------- */

static nvmlReturn_t device_count(const char *function, unsigned int *count)
{
    CHECK(enter(function, ANY_GPU));
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    *count = cfg.gpu_count;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetCount(unsigned int *count) { return device_count(__func__, count); }
API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) { return device_count(__func__, count); }

static nvmlReturn_t handle_by_index(const char *function, unsigned int index, nvmlDevice_t *device)
{
    CHECK(enter(function, index < MAX_GPUS ? (int)index : ANY_GPU));
    if (!device || index >= cfg.gpu_count) return NVML_ERROR_INVALID_ARGUMENT;
    *device = &gpus[index];
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
    return handle_by_index(__func__, index, device);
}

API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    return handle_by_index(__func__, index, device);
}

static struct nvmlDevice_st *find_by_uuid(const char *uuid)
{
    unsigned int g, m;
    for (g = 0; g < cfg.gpu_count; g++) {
        if (strcmp(gpus[g].uuid, uuid) == 0) return &gpus[g];
#ifndef SIMULATED_NVML_LEGACY
        for (m = 0; m < gpus[g].mig_count; m++)
            if (strcmp(migs[g][m].uuid, uuid) == 0) return &migs[g][m];
#else
        (void)m;
#endif
    }
    return NULL;
}

API nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
    struct nvmlDevice_st *found;
    if (!init_count) return NVML_ERROR_UNINITIALIZED;
    if (!uuid || !device) return NVML_ERROR_INVALID_ARGUMENT;
    found = find_by_uuid(uuid);
    CHECK(injected(__func__, found ? (int)found->gpu_index : ANY_GPU));
    if (!found) return NVML_ERROR_NOT_FOUND;
    *device = found;
    return NVML_SUCCESS;
}

/* Accepts domain:bus:device.function, domain:bus:device and bus:device.function, in hex. */
static int parse_bus_id(const char *s, unsigned int *domain, unsigned int *bus, unsigned int *device)
{
    unsigned int function;
    int consumed = 0;
    if (sscanf(s, "%x:%x:%x.%x%n", domain, bus, device, &function, &consumed) == 4 && s[consumed] == '\0')
        return 0;
    consumed = 0;
    if (sscanf(s, "%x:%x:%x%n", domain, bus, device, &consumed) == 3 && s[consumed] == '\0') return 0;
    consumed = 0;
    *domain = 0;
    if (sscanf(s, "%x:%x.%x%n", bus, device, &function, &consumed) == 3 && s[consumed] == '\0') return 0;
    return -1;
}

API nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device)
{
    unsigned int domain, bus, dev, g;
    struct nvmlDevice_st *found = NULL;
    if (!init_count) return NVML_ERROR_UNINITIALIZED;
    if (!pciBusId || !device || parse_bus_id(pciBusId, &domain, &bus, &dev) != 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (g = 0; g < cfg.gpu_count && !found; g++)
        if (gpus[g].pci_domain == domain && gpus[g].pci_bus == bus && gpus[g].pci_device == dev) found = &gpus[g];
    CHECK(injected(__func__, found ? (int)found->gpu_index : ANY_GPU));
    if (!found) return NVML_ERROR_NOT_FOUND;
    *device = found;
    return NVML_SUCCESS;
}

/* ---- device queries --------------------------------------------------------------------- */

API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    struct nvmlDevice_st *d;
    CHECK(enter_device(__func__, device, &d));
    return copy_string(d->name, name, length);
}

API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    struct nvmlDevice_st *d;
    CHECK(enter_device(__func__, device, &d));
    return copy_string(d->uuid, uuid, length);
}

API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    struct nvmlDevice_st *d;
    CHECK(enter_device(__func__, device, &d));
    if (!memory) return NVML_ERROR_INVALID_ARGUMENT;
    memory->total = d->memory_mib << 20;
    memory->used = d->memory_used_mib << 20;
    memory->free = memory->total - memory->used;
    return NVML_SUCCESS;
}

#ifndef SIMULATED_NVML_LEGACY
API nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
    struct nvmlDevice_st *d;
    CHECK(enter_device(__func__, device, &d));
    if (!memory) return NVML_ERROR_INVALID_ARGUMENT;
    if (memory->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    memory->total = d->memory_mib << 20;
    memory->reserved = 0;
    memory->used = d->memory_used_mib << 20;
    memory->free = memory->total - memory->used;
    return NVML_SUCCESS;
}

typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlProcessInfo_v3_t;

/* NVML's contract: with too small an array, the count needed and INSUFFICIENT_SIZE. */
API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                         nvmlProcessInfo_v3_t *infos)
{
    struct nvmlDevice_st *d;
    const char *p;
    unsigned int count = 0, pid;
    unsigned long long mib;
    int consumed;
    CHECK(enter_device(__func__, device, &d));
    if (!infoCount) return NVML_ERROR_INVALID_ARGUMENT;
    for (p = physical(d)->processes; sscanf(p, "%u:%llu%n", &pid, &mib, &consumed) == 2; p += consumed) {
        if (infos && count < *infoCount) {
            infos[count].pid = pid;
            infos[count].usedGpuMemory = mib << 20;
            infos[count].gpuInstanceId = 0xFFFFFFFFu;
            infos[count].computeInstanceId = 0xFFFFFFFFu;
        }
        count++;
        if (*(p + consumed) == ',') p++;
    }
    if (count > *infoCount || (count && !infos)) {
        *infoCount = count;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    *infoCount = count;
    return NVML_SUCCESS;
}
#endif

API nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    struct nvmlDevice_st *d;
    CHECK(enter_device(__func__, device, &d));
    if (!pci) return NVML_ERROR_INVALID_ARGUMENT;
    d = physical(d);
    memset(pci, 0, sizeof *pci);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT,
             d->pci_domain & 0xffffu, d->pci_bus, d->pci_device);
    snprintf(pci->busId, sizeof pci->busId, NVML_DEVICE_PCI_BUS_ID_FMT, d->pci_domain, d->pci_bus, d->pci_device);
    pci->domain = d->pci_domain;
    pci->bus = d->pci_bus;
    pci->device = d->pci_device;
    pci->pciDeviceId = d->pci_device_id;
    pci->pciSubSystemId = d->pci_subsystem_id;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber)
{
    struct nvmlDevice_st *d;
    CHECK(enter_device(__func__, device, &d));
    if (!minorNumber) return NVML_ERROR_INVALID_ARGUMENT;
    if (d->is_mig) return NVML_ERROR_NOT_SUPPORTED;
    *minorNumber = d->minor;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor)
{
    struct nvmlDevice_st *d;
    CHECK(enter_device(__func__, device, &d));
    if (!major || !minor) return NVML_ERROR_INVALID_ARGUMENT;
    d = physical(d);
    *major = d->cc_major;
    *minor = d->cc_minor;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetCpuAffinity(nvmlDevice_t device, unsigned int cpuSetSize, unsigned long *cpuSet)
{
    struct nvmlDevice_st *d;
    unsigned int i;
    CHECK(enter_device(__func__, device, &d));
    if (!cpuSet || cpuSetSize == 0) return NVML_ERROR_INVALID_ARGUMENT;
    d = physical(d);
    if (!d->has_cpu_affinity) return NVML_ERROR_NOT_SUPPORTED;
    for (i = 0; i < cpuSetSize; i++) cpuSet[i] = i < AFFINITY_WORDS ? d->cpu_affinity[i] : 0;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int *clock)
{
    struct nvmlDevice_st *d;
    CHECK(enter_device(__func__, device, &d));
    if (!clock || (unsigned int)type >= NVML_CLOCK_COUNT) return NVML_ERROR_INVALID_ARGUMENT;
    d = physical(d);
    /* Graphics and SM clocks are one domain on the parts simulated here; no memory/video data. */
    if ((type != NVML_CLOCK_SM && type != NVML_CLOCK_GRAPHICS) || !d->has_sm_clock)
        return NVML_ERROR_NOT_SUPPORTED;
    *clock = d->sm_clock_mhz;
    return NVML_SUCCESS;
}

#ifndef SIMULATED_NVML_LEGACY

API nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int *node)
{
    struct nvmlDevice_st *d;
    CHECK(enter_device(__func__, device, &d));
    if (!node) return NVML_ERROR_INVALID_ARGUMENT;
    d = physical(d);
    if (!d->has_numa_node) return NVML_ERROR_NOT_SUPPORTED;
    *node = (unsigned int)d->numa_node;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetNumGpuCores(nvmlDevice_t device, unsigned int *numCores)
{
    struct nvmlDevice_st *d;
    CHECK(enter_device(__func__, device, &d));
    if (!numCores) return NVML_ERROR_INVALID_ARGUMENT;
    if (d->is_mig || !d->has_cores) return NVML_ERROR_NOT_SUPPORTED;
    *numCores = d->cores;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device, nvmlDeviceArchitecture_t *arch)
{
    struct nvmlDevice_st *d;
    CHECK(enter_device(__func__, device, &d));
    if (!arch) return NVML_ERROR_INVALID_ARGUMENT;
    *arch = physical(d)->architecture;
    return NVML_SUCCESS;
}

/* ---- MIG: queries that need the parent GPU's handle reject a MIG handle as invalid; queries
 * about a MIG device answer NOT_SUPPORTED for a full GPU's handle. ---------------------------- */

API nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode)
{
    struct nvmlDevice_st *d;
    CHECK(enter_device(__func__, device, &d));
    if (!currentMode || !pendingMode || d->is_mig) return NVML_ERROR_INVALID_ARGUMENT;
    if (!d->mig_capable) return NVML_ERROR_NOT_SUPPORTED;
    *currentMode = d->mig_current;
    *pendingMode = d->mig_pending;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
    struct nvmlDevice_st *d;
    CHECK(enter_device(__func__, device, &d));
    if (!count || d->is_mig) return NVML_ERROR_INVALID_ARGUMENT;
    if (!d->mig_capable) return NVML_ERROR_NOT_SUPPORTED;
    *count = d->mig_current ? d->mig_max_devices : 0;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index, nvmlDevice_t *migDevice)
{
    struct nvmlDevice_st *d;
    CHECK(enter_device(__func__, device, &d));
    if (!migDevice || d->is_mig) return NVML_ERROR_INVALID_ARGUMENT;
    if (!d->mig_capable) return NVML_ERROR_NOT_SUPPORTED;
    if (!d->mig_current || index >= d->mig_max_devices) return NVML_ERROR_INVALID_ARGUMENT;
    if (index >= d->mig_count) return NVML_ERROR_NOT_FOUND;
    *migDevice = &migs[d->gpu_index][index];
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int *isMigDevice)
{
    struct nvmlDevice_st *d;
    CHECK(enter_device(__func__, device, &d));
    if (!isMigDevice) return NVML_ERROR_INVALID_ARGUMENT;
    *isMigDevice = (unsigned int)d->is_mig;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice, nvmlDevice_t *device)
{
    struct nvmlDevice_st *d;
    CHECK(enter_device(__func__, migDevice, &d));
    if (!device || !d->is_mig) return NVML_ERROR_INVALID_ARGUMENT;
    *device = physical(d);
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id)
{
    struct nvmlDevice_st *d;
    CHECK(enter_device(__func__, device, &d));
    if (!id) return NVML_ERROR_INVALID_ARGUMENT;
    if (!d->is_mig) return NVML_ERROR_NOT_SUPPORTED;
    *id = d->gpu_instance_id;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id)
{
    struct nvmlDevice_st *d;
    CHECK(enter_device(__func__, device, &d));
    if (!id) return NVML_ERROR_INVALID_ARGUMENT;
    if (!d->is_mig) return NVML_ERROR_NOT_SUPPORTED;
    *id = d->compute_instance_id;
    return NVML_SUCCESS;
}

#endif /* SIMULATED_NVML_LEGACY */

/* ---- health: each group answers NOT_SUPPORTED unless the config gave it, as on parts that lack
 * it (ECC and row remapping on consumer GPUs, fabric state without NVSwitch); MIG handles answer
 * INVALID_ARGUMENT for what belongs to the whole GPU. ------------------------------------------ */

static nvmlReturn_t health_device(const char *function, nvmlDevice_t handle, const void *out, size_t present,
                                  struct nvmlDevice_st **d)
{
    CHECK(enter_device(function, handle, d));
    if (!out || (*d)->is_mig) return NVML_ERROR_INVALID_ARGUMENT;
    return *(const int *)((const char *)*d + present) ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

API nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, nvmlEnableState_t *current, nvmlEnableState_t *pending)
{
    struct nvmlDevice_st *d;
    CHECK(health_device(__func__, device, pending ? (void *)current : NULL, DEVICE_FLAG(has_ecc), &d));
    *current = d->ecc_current;
    *pending = d->ecc_pending;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                             nvmlEccCounterType_t counterType, unsigned long long *eccCounts)
{
    struct nvmlDevice_st *d;
    CHECK(health_device(__func__, device, eccCounts, DEVICE_FLAG(has_ecc), &d));
    if (errorType != NVML_MEMORY_ERROR_TYPE_UNCORRECTED) *eccCounts = 0; /* only uncorrected ones are simulated */
    else *eccCounts = counterType == NVML_VOLATILE_ECC ? d->ecc_uncorrected_volatile : d->ecc_uncorrected_aggregate;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device, nvmlEnableState_t *isPending)
{
    struct nvmlDevice_st *d;
    CHECK(health_device(__func__, device, isPending, DEVICE_FLAG(has_retired_pages), &d));
    *isPending = d->retired_pages_pending;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t *mode)
{
    struct nvmlDevice_st *d;
    CHECK(health_device(__func__, device, mode, DEVICE_FLAG(has_persistence_mode), &d));
    *mode = d->persistence_mode;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t *mode)
{
    struct nvmlDevice_st *d;
    CHECK(health_device(__func__, device, mode, DEVICE_FLAG(has_compute_mode), &d));
    *mode = d->compute_mode;
    return NVML_SUCCESS;
}

#define PCIE_GETTER(function, member)                                             \
    API nvmlReturn_t function(nvmlDevice_t device, unsigned int *value)           \
    {                                                                             \
        struct nvmlDevice_st *d;                                                  \
        CHECK(health_device(__func__, device, value, DEVICE_FLAG(has_pcie), &d)); \
        *value = d->member;                                                       \
        return NVML_SUCCESS;                                                      \
    }

PCIE_GETTER(nvmlDeviceGetCurrPcieLinkGeneration, pcie_gen)
PCIE_GETTER(nvmlDeviceGetMaxPcieLinkGeneration, pcie_max_gen)
PCIE_GETTER(nvmlDeviceGetCurrPcieLinkWidth, pcie_width)
PCIE_GETTER(nvmlDeviceGetMaxPcieLinkWidth, pcie_max_width)

API nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensor, unsigned int *temp)
{
    struct nvmlDevice_st *d;
    CHECK(health_device(__func__, device, temp, DEVICE_FLAG(has_temperature), &d));
    if (sensor != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
    *temp = d->temperature_c;
    return NVML_SUCCESS;
}

#ifndef SIMULATED_NVML_LEGACY

API nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int *corrRows, unsigned int *uncRows,
                                           unsigned int *isPending, unsigned int *failureOccurred)
{
    struct nvmlDevice_st *d;
    const void *all = corrRows && uncRows && isPending ? (void *)failureOccurred : NULL;
    CHECK(health_device(__func__, device, all, DEVICE_FLAG(has_remapped_rows), &d));
    *corrRows = d->remapped_correctable;
    *uncRows = d->remapped_uncorrectable;
    *isPending = d->remapped_pending;
    *failureOccurred = d->remapped_failed;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device, unsigned long long *reasons)
{
    struct nvmlDevice_st *d;
    CHECK(health_device(__func__, device, reasons, DEVICE_FLAG(has_clock_events), &d));
    *reasons = d->clock_event_reasons;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device, nvmlGpuFabricInfo_v2_t *info)
{
    struct nvmlDevice_st *d;
    CHECK(health_device(__func__, device, info, DEVICE_FLAG(has_fabric), &d));
    if (info->version != nvmlGpuFabricInfo_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    memset(info->clusterUuid, 0, sizeof info->clusterUuid);
    info->status = (nvmlReturn_t)d->fabric_status;
    info->cliqueId = d->fabric_clique_id;
    info->state = d->fabric_state;
    info->healthMask = 0;
    return NVML_SUCCESS;
}

#endif /* SIMULATED_NVML_LEGACY */

/* ---- events and field values ------------------------------------------------------------ */

typedef struct {
    nvmlDevice_t device;
    unsigned long long eventType;
    unsigned long long eventData;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlEventData_t;

API nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
    unsigned int i;
    CHECK(enter(__func__, ANY_GPU));
    if (!set) return NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&events_lock);
    for (i = 0; i < MAX_EVENT_SETS && event_sets[i].used; i++) continue;
    if (i < MAX_EVENT_SETS) {
        memset(&event_sets[i], 0, sizeof event_sets[i]);
        event_sets[i].used = 1;
        *set = &event_sets[i];
    }
    pthread_mutex_unlock(&events_lock);
    return i < MAX_EVENT_SETS ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_RESOURCES;
}

static struct nvmlEventSet_st *event_set(nvmlEventSet_t set)
{
    uintptr_t p = (uintptr_t)set, base = (uintptr_t)event_sets;
    if (p < base || p >= base + sizeof event_sets || (p - base) % sizeof event_sets[0]) return NULL;
    return set->used ? set : NULL;
}

API nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long *eventTypes)
{
    struct nvmlDevice_st *d;
    CHECK(enter_device(__func__, device, &d));
    if (!eventTypes || d->is_mig) return NVML_ERROR_INVALID_ARGUMENT;
    *eventTypes = d->event_types;
    return NVML_SUCCESS;
}

/* As NVML: NOT_SUPPORTED when any requested type is one the GPU does not deliver. */
API nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set)
{
    struct nvmlDevice_st *d;
    struct nvmlEventSet_st *s;
    CHECK(enter_device(__func__, device, &d));
    s = event_set(set);
    if (!s || d->is_mig) return NVML_ERROR_INVALID_ARGUMENT;
    if (eventTypes & ~d->event_types) return NVML_ERROR_NOT_SUPPORTED;
    pthread_mutex_lock(&events_lock);
    s->types[d->gpu_index] |= eventTypes;
    pthread_mutex_unlock(&events_lock);
    return NVML_SUCCESS;
}

/* Polls the events file every 100 ms until an event or the timeout (real NVML sleeps in the kernel). */
API nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
    const struct timespec pause_ = {0, 100 * 1000 * 1000};
    unsigned int waited = 0;
    struct nvmlEventSet_st *s;
    CHECK(enter(__func__, ANY_GPU));
    s = event_set(set);
    if (!s || !data) return NVML_ERROR_INVALID_ARGUMENT;
    for (;;) {
        struct event e = {0, 0, 0};
        pthread_mutex_lock(&events_lock);
        read_events(0);
        if (s->count) {
            e = s->queue[s->head];
            s->head = (s->head + 1) % EVENT_QUEUE;
            s->count--;
        }
        pthread_mutex_unlock(&events_lock);
        if (e.type) {
            memset(data, 0, sizeof *data);
            data->device = &gpus[e.gpu_index];
            data->eventType = e.type;
            data->eventData = e.data;
            data->gpuInstanceId = data->computeInstanceId = 0xFFFFFFFFu;
            return NVML_SUCCESS;
        }
        if (waited >= timeoutms) return NVML_ERROR_TIMEOUT;
        nanosleep(&pause_, NULL);
        waited += 100;
    }
}

API nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
    struct nvmlEventSet_st *s;
    CHECK(enter(__func__, ANY_GPU));
    s = event_set(set);
    if (!s) return NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&events_lock);
    s->used = 0;
    pthread_mutex_unlock(&events_lock);
    return NVML_SUCCESS;
}

typedef union {
    double dVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    signed long long sllVal;
    signed int siVal;
    unsigned short usVal;
} nvmlValue_t;

typedef struct {
    unsigned int fieldId;
    unsigned int scopeId;
    long long timestamp;
    long long latencyUsec;
    unsigned int valueType;
    nvmlReturn_t nvmlReturn;
    nvmlValue_t value;
} nvmlFieldValue_t;

#define NVML_FI_DEV_GET_GPU_RECOVERY_ACTION 230
#define NVML_VALUE_TYPE_UNSIGNED_INT 1

/* Only the recovery action is simulated; every other field answers NOT_SUPPORTED in its slot. */
API nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount, nvmlFieldValue_t *values)
{
    struct nvmlDevice_st *d;
    int i;
    CHECK(enter_device(__func__, device, &d));
    if (!values || valuesCount < 0) return NVML_ERROR_INVALID_ARGUMENT;
    d = physical(d);
    for (i = 0; i < valuesCount; i++) {
        int known = values[i].fieldId == NVML_FI_DEV_GET_GPU_RECOVERY_ACTION && d->has_recovery_action;
        values[i].timestamp = (long long)time(NULL) * 1000000;
        values[i].latencyUsec = 0;
        values[i].valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
        values[i].nvmlReturn = known ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
        values[i].value.ullVal = known ? d->recovery_action : 0;
    }
    return NVML_SUCCESS;
}
