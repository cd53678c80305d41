/*
 * admit_bench: the admission core alone — wh_admit on a review held in
 * memory (decode, mutate, encode; logging off), no TLS, no HTTP, no
 * sockets. It separates what our code costs per review from what the
 * transport costs, which wrk's end-to-end figures cannot.
 *
 * Usage: admit_bench [-n ITERATIONS] [-b BATCHES] [-s GAP_MS] [-o DIR] REVIEW.json...
 * Prints, per file: bytes, then the fastest batch's mean µs per admission
 * (the minimum over batches is the figure least disturbed by other load
 * on a shared machine), and the median batch's. The batches are GAP_MS
 * (25) apart: a virtual machine's core runs slower for stretches of tens
 * of milliseconds while its host's other work shares it (5.5 against
 * 8 µs, back to back, on the same core), and batches run back to back
 * all fall into one such stretch. With -o, nothing is timed:
 * each review's answer is written to DIR/<name>.response (name: the file's
 * without .review.json), as tests/fixtures/unit/admit-golden was made.
 * ADMIT_BENCH_LOG=1 logs each admission (-v 2, to stderr) as the server does.
 */
#include <errno.h>
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

/* Write the answer to path's review into dir (the golden outputs). */
static int dump(const struct wh_admit_ctx *ctx, const char *path, const char *dir)
{
    size_t len;
    char *body = slurp(path, &len), out[4096];
    struct wh_admit_result res;
    if (!body || wh_admit(ctx, body, len, k8s_mono_ns(), &res) < 0) {
        fprintf(stderr, "admit_bench: cannot admit %s\n", path);
        free(body);
        return 1;
    }
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    size_t n = strlen(base);
    if (n > 12 && !strcmp(base + n - 12, ".review.json"))
        n -= 12;
    snprintf(out, sizeof(out), "%s/%.*s.response", dir, (int)n, base);
    FILE *f = fopen(out, "wb");
    int rc = !f || fprintf(f, "%d %s\n", res.status, res.content_type) < 0 ||
             fwrite(res.body, 1, res.len, f) != res.len;
    if (f && fclose(f))
        rc = 1;
    free(res.body);
    free(body);
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void pause_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static int run(const struct wh_admit_ctx *ctx, const char *path, int iters, int batches, int gap_ms)
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
        if (gap_ms > 0 && b < batches)
            pause_ms(gap_ms);
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
    int iters = 2000, batches = 15, gap_ms = 25, opt;
    const char *dir = NULL;
    while ((opt = getopt(argc, argv, "n:b:s:o:")) != -1) {
        if (opt == 'n')
            iters = atoi(optarg);
        else if (opt == 'b')
            batches = atoi(optarg);
        else if (opt == 's')
            gap_ms = atoi(optarg);
        else if (opt == 'o')
            dir = optarg;
        else
            return 2;
    }
    if (optind >= argc || iters < 1 || batches < 1 || gap_ms < 0) {
        fprintf(stderr, "usage: admit_bench [-n ITERATIONS] [-b BATCHES] [-s GAP_MS] [-o DIR] "
                        "REVIEW.json...\n");
        return 2;
    }
    k8s_arena_jansson_install();
    k8s_log_set_level(getenv("ADMIT_BENCH_LOG") ? 2 : -1);
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
        rc |= dir ? dump(&ctx, argv[i], dir) : run(&ctx, argv[i], iters, batches, gap_ms);
    return rc;
}
