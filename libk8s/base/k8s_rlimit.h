/*
 * k8s_rlimit — the process's descriptor limit raised to what it may have,
 * as Go's runtime does at start: a server holds a descriptor per client
 * connection (the webhook up to --max-connections) or per target pod (the
 * operator, 1,536 and more), and a container's soft limit is often 1024
 * below a hard one of 1,048,576.
 *
 * Thread-safety: call once at start, before threads. Never fails: when the
 * limit cannot be raised the old one stays, and the return value says so.
 */
#ifndef K8S_RLIMIT_H
#define K8S_RLIMIT_H

/* Raise RLIMIT_NOFILE's soft limit to its hard limit. Returns the soft
 * limit now in force (0 if unreadable). */
unsigned long k8s_rlimit_raise_nofile(void);

#endif
