#include "k8s_cpu.h"

#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The first line of root/name, or false. */
static bool read_line(const char *root, const char *name, char *buf, size_t size)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof(path), "%s/%s", root, name) >= (int)sizeof(path))
        return false;
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    bool ok = fgets(buf, (int)size, f) != NULL;
    fclose(f);
    return ok;
}

/* CPUs the quota allows (quota / period, rounded up), or 0 for no limit. */
static long quota_cpus(long long quota, long long period)
{
    if (quota <= 0 || period <= 0)
        return 0;
    long long n = (quota + period - 1) / period;
    return n > INT_MAX ? INT_MAX : (long)n;
}

static long cgroup_cpus(const char *root)
{
    char line[128], max[32];
    long long quota = 0, period = 0;
    if (read_line(root, "cpu.max", line, sizeof(line))) { /* v2: "max 100000" or "150000 100000" */
        if (sscanf(line, "%31s %lld", max, &period) == 2 && strcmp(max, "max") != 0 &&
            sscanf(max, "%lld", &quota) == 1)
            return quota_cpus(quota, period);
        return 0;
    }
    if (read_line(root, "cpu/cpu.cfs_quota_us", line, sizeof(line)) && /* v1; -1 = none */
        sscanf(line, "%lld", &quota) == 1 &&
        read_line(root, "cpu/cpu.cfs_period_us", line, sizeof(line)) &&
        sscanf(line, "%lld", &period) == 1)
        return quota_cpus(quota, period);
    return 0;
}

int k8s_cpu_count_at(const char *cgroup_root)
{
    cpu_set_t set;
    long n = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set)
                                                          : sysconf(_SC_NPROCESSORS_ONLN);
    long q = cgroup_cpus(cgroup_root);
    if (q > 0 && (n <= 0 || q < n))
        n = q;
    return n > 0 ? (int)(n > INT_MAX ? INT_MAX : n) : 1;
}

int k8s_cpu_count(void)
{
    return k8s_cpu_count_at("/sys/fs/cgroup");
}
