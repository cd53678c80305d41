/*
 * k8s_cpu — how many CPUs this process may use: its affinity mask, capped
 * by its cgroup's CPU quota rounded up (cgroup v2 cpu.max, or v1
 * cpu.cfs_quota_us / cpu.cfs_period_us), as Go's runtime sets GOMAXPROCS.
 * A pod with a CPU limit of 1.5 on a 208-vCPU TPU host may use 2, not 208.
 *
 * Thread-safety: reentrant. Never fails: with nothing readable the answer
 * is the affinity count, and at least 1.
 */
#ifndef K8S_CPU_H
#define K8S_CPU_H

/* Usable CPUs, reading the cgroup files under cgroup_root ("/sys/fs/cgroup"
 * in production; a directory of fake files in tests). */
int k8s_cpu_count_at(const char *cgroup_root);

/* k8s_cpu_count_at("/sys/fs/cgroup"). */
int k8s_cpu_count(void);

#endif
