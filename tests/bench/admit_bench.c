/*
 * admit_bench: the admission core alone — wh_admit on a review held in
 * memory (decode, mutate, encode; logging off), no TLS, no HTTP, no
 * sockets. It separates what our code costs per review from what the
 * transport costs, which wrk's end-to-end figures cannot.
 *
 * Usage: admit_bench [-n ITERATIONS] [-b BATCHES] REVIEW.json...
 * Prints, per file: bytes, then the fastest batch's mean µs per admission
 * (the minimum over batches is the figure least disturbed by other load
 * on a shared machine), and the median batch's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "k8s_arena.h"
#include "k8s_log.h"
#include "k8s_time.h"
#include "wh_admit.h"

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0, got;
    do {
        if (n == cap && !(buf = realloc(buf, cap = cap ? 2 * cap : 65536)))
            break;
        got = fread(buf + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    fclose(f);
    *len = n;
    return buf;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int run(const struct wh_admit_ctx *ctx, const char *path, int iters, int batches)
{
    size_t len;
    char *body = slurp(path, &len);
    if (!body) {
        fprintf(stderr, "admit_bench: cannot read %s\n", path);
        return 1;
    }
    double *us = calloc((size_t)batches, sizeof(*us));
    int rc = us ? 0 : 1;
    for (int b = 0; rc == 0 && b <= batches; b++) { /* batch 0 warms up */
        int64_t t0 = k8s_mono_ns();
        for (int i = 0; rc == 0 && i < iters; i++) {
            struct wh_admit_result res;
            if (wh_admit(ctx, body, len, k8s_mono_ns(), &res) < 0 || res.status != 200)
                rc = 1;
            else
                free(res.body);
        }
        if (b > 0)
            us[b - 1] = (double)(k8s_mono_ns() - t0) / 1e3 / iters;
    }
    if (rc == 0) {
        qsort(us, (size_t)batches, sizeof(*us), cmp_double);
        printf("%s %zu %.2f %.2f\n", path, len, us[0], us[batches / 2]);
    } else {
        fprintf(stderr, "admit_bench: %s was not admitted with status 200\n", path);
    }
    free(us);
    free(body);
    return rc;
}

int main(int argc, char **argv)
{
    int iters = 2000, batches = 7, opt;
    while ((opt = getopt(argc, argv, "n:b:")) != -1) {
        if (opt == 'n')
            iters = atoi(optarg);
        else if (opt == 'b')
            batches = atoi(optarg);
        else
            return 2;
    }
    if (optind >= argc || iters < 1 || batches < 1) {
        fprintf(stderr, "usage: admit_bench [-n ITERATIONS] [-b BATCHES] REVIEW.json...\n");
        return 2;
    }
    k8s_arena_jansson_install();
    k8s_log_set_level(-1);
    struct wh_config cfg;
    wh_config_init(&cfg);
    cfg.standalone = true;
    cfg.cluster_name = "projects/demo/locations/us-central1/clusters/tpu-1";
    struct k8s_error err;
    if (wh_config_finish(&cfg, &err) < 0) {
        fprintf(stderr, "admit_bench: %s\n", err.message);
        return 1;
    }
    struct wh_admit_ctx ctx;
    wh_admit_init(&ctx, &cfg, NULL, NULL);
    int rc = 0;
    for (int i = optind; i < argc; i++)
        rc |= run(&ctx, argv[i], iters, batches);
    return rc;
}
