/*
 * libFuzzer target: the watch stream parser. The input is split into
 * chunks at positions the input itself chooses (as TCP and chunked encoding
 * do), framed into lines and each line decoded as a watch event; any line
 * must either decode or be refused with an error, never crash or leak.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_lines.h"
#include "k8s_watch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct k8s_json_filter meta_only[] = {{"metadata", NULL}, {NULL}};

static int on_line(void *ud, const char *line, size_t len)
{
    struct k8s_watch_event ev;
    struct k8s_error err;
    if (k8s_watch_decode(line, len, ud ? meta_only : NULL, &ev, &err) == 0) {
        if (ev.type == K8S_WIRE_ERROR && ev.code == 0 && !ev.object)
            abort();
        json_decref(ev.object);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    unsigned step = 1 + data[0] % 64; /* chunk size */
    bool filtered = data[1] & 1;
    data += 2;
    size -= 2;
    struct k8s_lines l;
    k8s_lines_init(&l, 1 << 16);
    for (size_t off = 0; off < size; off += step) {
        size_t n = size - off < step ? size - off : step;
        if (k8s_lines_feed(&l, (const char *)data + off, n, on_line, filtered ? &l : NULL) < 0)
            break;
    }
    k8s_lines_done(&l);
    return 0;
}
