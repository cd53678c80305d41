/* k8s_cpu: the affinity mask capped by the cgroup CPU quota (v2 and v1). */
#include <criterion/criterion.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "k8s_cpu.h"

static char root[] = "/tmp/mld-cpu-XXXXXX";

static void make_root(void)
{
    cr_assert_not_null(mkdtemp(root));
}

static void remove_root(void)
{
    char cmd[64];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(cpu, .init = make_root, .fini = remove_root);

static void put(const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", root, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

static int affinity(void)
{
    cpu_set_t set;
    cr_assert_eq(sched_getaffinity(0, sizeof(set), &set), 0);
    return CPU_COUNT(&set);
}

Test(cpu, no_cgroup_files_means_the_affinity_mask)
{
    cr_assert_eq(k8s_cpu_count_at(root), affinity());
    cr_assert_eq(k8s_cpu_count_at("/nonexistent"), affinity());
}

Test(cpu, v2_quota_rounds_up_and_never_raises_the_count)
{
    put("cpu.max", "50000 100000\n"); /* 0.5 CPU → 1 */
    cr_assert_eq(k8s_cpu_count_at(root), 1);
    put("cpu.max", "max 100000\n");
    cr_assert_eq(k8s_cpu_count_at(root), affinity());
    put("cpu.max", "100000000 100000\n"); /* 1000 CPUs: the mask is smaller */
    cr_assert_eq(k8s_cpu_count_at(root), affinity());
    put("cpu.max", "garbage\n");
    cr_assert_eq(k8s_cpu_count_at(root), affinity());
}

Test(cpu, v2_quota_of_one_and_a_half_cpus_gives_two_when_there_are_two)
{
    put("cpu.max", "150000 100000\n");
    int n = affinity();
    cr_assert_eq(k8s_cpu_count_at(root), n < 2 ? n : 2);
}

Test(cpu, v1_quota)
{
    char dir[300];
    snprintf(dir, sizeof(dir), "%s/cpu", root);
    cr_assert_eq(mkdir(dir, 0755), 0);
    put("cpu/cpu.cfs_quota_us", "-1\n");
    put("cpu/cpu.cfs_period_us", "100000\n");
    cr_assert_eq(k8s_cpu_count_at(root), affinity());
    put("cpu/cpu.cfs_quota_us", "100000\n");
    cr_assert_eq(k8s_cpu_count_at(root), 1);
}
