/*
 * Copyright: (c) 2026, gpufleet.exo contributors
 * GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
 *
 * A simulated libcuda.so.1 for tests: the CUDA driver calls the probe makes (cuInit,
 * cuDeviceGetCount, cuDeviceGet, cuDeviceGetUuid(_v2), cuDeviceGetPCIBusId, cuGetErrorName), with
 * the signatures and CUresult values of cuda.h.
 *
 * It does not read CUDA_VISIBLE_DEVICES by any rule of its own. What cuInit answers for the
 * process's CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER is looked up in a table of answers, one
 * line each, in the file named by SIMULATED_CUDA_CONFIG; tests/simulated/cuda.py writes that table
 * from what a real driver answered (tests/fixtures/real-h100/cuda_visible_devices.json). For an
 * environment the table does not hold, cuInit returns CUDA_ERROR_UNKNOWN (999) and says so on
 * stderr: the simulation does not guess what a driver would do.
 *
 * Line format (tests/simulated/cuda.py's docstring has the details):
 *   answer=<visible> <order> <cuInit's code> <devices>
 *     visible, order: "-" for unset, else "=" followed by the percent-encoded value
 *     devices: "-" for none, else <uuid>@<pci bus id> joined by ","
 *   hang_in=cuInit      cuInit blocks forever (for deadline tests)
 *
 * Plain C11 + POSIX, no dependencies.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "percent.h"

#define API __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef struct { unsigned char bytes[16]; } CUuuid;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_ERROR_INVALID_DEVICE 101
#define CUDA_ERROR_UNKNOWN 999

#define MAX_DEVICES 64
#define LINE 8192

static const struct { CUresult code; const char *name; } ERROR_NAMES[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN"},
};

static struct { unsigned char uuid[16]; char bus_id[32]; } devices[MAX_DEVICES];
static int device_count = -1; /* -1: cuInit has not succeeded */

/* Whether a table token ("-" or "=<encoded>") stands for this variable's value (NULL: unset). */
static int token_matches(const char *token, const char *value)
{
    char decoded[LINE];
    if (strcmp(token, "-") == 0) return value == NULL;
    if (token[0] != '=' || value == NULL || percent_decode(token + 1, decoded, sizeof decoded) != 0) return 0;
    return strcmp(decoded, value) == 0;
}

static int parse_devices(char *list)
{
    int n = 0;
    if (strcmp(list, "-") == 0) return 0;
    for (char *save = NULL, *item = strtok_r(list, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *at = strchr(item, '@');
        int nibbles = 0;
        if (!at || n >= MAX_DEVICES || strlen(at + 1) >= sizeof devices[n].bus_id) return -1;
        memset(devices[n].uuid, 0, sizeof devices[n].uuid);
        for (char *p = item; p < at; p++) {
            int v = hex_value(*p);
            if (*p == '-') continue;
            if (v < 0 || nibbles >= 32) return -1;
            devices[n].uuid[nibbles / 2] |= (unsigned char)(nibbles % 2 ? v : v << 4);
            nibbles++;
        }
        if (nibbles != 32) return -1;
        strcpy(devices[n].bus_id, at + 1);
        n++;
    }
    return n;
}

API CUresult cuInit(unsigned int flags)
{
    const char *path = getenv("SIMULATED_CUDA_CONFIG");
    const char *visible = getenv("CUDA_VISIBLE_DEVICES"), *order = getenv("CUDA_DEVICE_ORDER");
    char line[LINE];
    CUresult result = CUDA_ERROR_UNKNOWN;
    int found = 0;
    FILE *f;

    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    if (!path || !(f = fopen(path, "r"))) {
        fprintf(stderr, "simulated libcuda: SIMULATED_CUDA_CONFIG names no readable file\n");
        return CUDA_ERROR_UNKNOWN;
    }
    while (!found && fgets(line, sizeof line, f)) {
        char visible_token[LINE], order_token[LINE], list[LINE];
        int code;
        line[strcspn(line, "\n")] = '\0';
        if (strcmp(line, "hang_in=cuInit") == 0) {
            for (;;) pause();
        }
        if (strncmp(line, "answer=", 7) != 0
            || sscanf(line + 7, "%8191s %8191s %d %8191s", visible_token, order_token, &code, list) != 4)
            continue;
        if (!token_matches(visible_token, visible) || !token_matches(order_token, order)) continue;
        found = 1;
        result = code;
        if (code == CUDA_SUCCESS) {
            int n = parse_devices(list);
            if (n < 0) {
                fprintf(stderr, "simulated libcuda: malformed devices in %s: %s\n", path, line);
                result = CUDA_ERROR_UNKNOWN;
            } else {
                device_count = n;
            }
        }
    }
    fclose(f);
    if (!found)
        fprintf(stderr, "simulated libcuda: no recorded answer for CUDA_VISIBLE_DEVICES=%s%s%s CUDA_DEVICE_ORDER=%s\n",
                visible ? "'" : "(unset)", visible ? visible : "", visible ? "'" : "", order ? order : "(unset)");
    return result;
}

API CUresult cuGetErrorName(CUresult error, const char **name)
{
    for (size_t i = 0; i < sizeof ERROR_NAMES / sizeof ERROR_NAMES[0]; i++) {
        if (ERROR_NAMES[i].code == error) {
            *name = ERROR_NAMES[i].name;
            return CUDA_SUCCESS;
        }
    }
    *name = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

API CUresult cuDeviceGetCount(int *count)
{
    if (device_count < 0) return CUDA_ERROR_NOT_INITIALIZED;
    if (!count) return CUDA_ERROR_INVALID_VALUE;
    *count = device_count;
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    if (device_count < 0) return CUDA_ERROR_NOT_INITIALIZED;
    if (!device) return CUDA_ERROR_INVALID_VALUE;
    if (ordinal < 0 || ordinal >= device_count) return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice device)
{
    if (device_count < 0) return CUDA_ERROR_NOT_INITIALIZED;
    if (!uuid) return CUDA_ERROR_INVALID_VALUE;
    if (device < 0 || device >= device_count) return CUDA_ERROR_INVALID_DEVICE;
    memcpy(uuid->bytes, devices[device].uuid, sizeof uuid->bytes);
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice device)
{
    return cuDeviceGetUuid(uuid, device);
}

API CUresult cuDeviceGetPCIBusId(char *bus_id, int len, CUdevice device)
{
    if (device_count < 0) return CUDA_ERROR_NOT_INITIALIZED;
    if (!bus_id || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    if (device < 0 || device >= device_count) return CUDA_ERROR_INVALID_DEVICE;
    if ((size_t)len <= strlen(devices[device].bus_id)) return CUDA_ERROR_INVALID_VALUE;
    strcpy(bus_id, devices[device].bus_id);
    return CUDA_SUCCESS;
}
