/*
 * op_holds — which capture holds which pod (DESIGN §4.2: at most one
 * capture per target pod at a time; the profiler holds a process-wide
 * lock and answers a second Profile call with INTERNAL).
 *
 * A holder (an opaque pointer, the reconciler's per-resource record)
 * claims a set of pods ("namespace/pod") all at once or not at all: the
 * check that no other holder has one of them and the taking are one step
 * under one lock, so of two workers deciding at the same instant exactly
 * one wins. A new claim by the same holder replaces its previous set (a
 * re-dispatch keeps what it held). Holds last until released.
 *
 * Thread-safety: every function may be called from any thread.
 * Ownership: pods and names are copied in. Library code: never logs.
 */
#ifndef OP_HOLDS_H
#define OP_HOLDS_H

#include <stddef.h>

#include "k8s_err.h"

struct op_holds;

/* NULL when out of memory. */
struct op_holds *op_holds_new(void);
/* NULL-safe. */
void op_holds_free(struct op_holds *h);

/* Claim pods[0..n) ("ns/pod") for holder, named `name` ("ns/name") in the
 * messages of those who find a pod taken. -K8S_ECONFLICT when another
 * holder has one of them (reterr: "pod <pod> is busy with capture <name>",
 * the first such pod), nothing taken then; -K8S_ENOMEM. */
int op_holds_claim(struct op_holds *h, const void *holder, const char *name, char *const *pods,
                   size_t n, struct k8s_error *reterr) K8S_MUST_CHECK;

/* Give up everything holder holds (nothing: a no-op). */
void op_holds_release(struct op_holds *h, const void *holder);

/* Pods held, by anyone. */
size_t op_holds_count(struct op_holds *h);

#endif
