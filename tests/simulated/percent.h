/*
 * Copyright: (c) 2026, gpufleet.exo contributors
 * GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
 *
 * The percent-decoding of the simulated libraries' config files (libnvidia-ml.c, libcuda.c).
 */
#ifndef SIMULATED_PERCENT_H
#define SIMULATED_PERCENT_H

#include <stddef.h>

static int hex_value(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Values are percent-encoded so that any byte but NUL (non-UTF-8 names) fits on one line. */
static int percent_decode(const char *in, char *out, size_t size)
{
    size_t n = 0;
    while (*in) {
        int c = (unsigned char)*in;
        if (c == '%') {
            int hi = hex_value(in[1]), lo = hi < 0 ? -1 : hex_value(in[2]);
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) return -1;
            c = hi * 16 + lo;
            in += 3;
        } else {
            in++;
        }
        if (n + 1 >= size) return -1;
        out[n++] = (char)c;
    }
    out[n] = '\0';
    return 0;
}

#endif
