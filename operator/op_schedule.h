/*
 * op_schedule — a capture on a schedule (spec.schedule): the resource
 * becomes a parent that creates one child capture per tick, the pure step
 * of it (the clock and the children come in, what to create, delete and
 * write goes out; op_plan's rule: no I/O, no lock, no clock).
 *
 * A child is named <parent>-<unix minute of its tick>, carries the
 * parent's spec.triggerCapture, and is owned by the parent (controller,
 * blockOwnerDeletion: the garbage collector deletes it with the parent).
 * A tick missed while nobody reconciled (an outage) is owed once: only the
 * latest owed tick runs. With concurrencyPolicy Forbid (the default) a
 * tick waits while a child is still unfinished, and runs once it is (the
 * pods' claims keep two captures off one pod in any case). suspend stops
 * new children. Finished children beyond successfulHistoryLimit (3) and
 * failedHistoryLimit (1) are deleted, oldest first. The parent's status
 * says lastScheduleTime, the unfinished children (active) and when the
 * next tick is.
 *
 * Thread-safety: reentrant. Ownership: op_schedule owns nothing; a plan
 * owns its JSON (op_schedule_done) and borrows remove[] from the input.
 */
#ifndef OP_SCHEDULE_H
#define OP_SCHEDULE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "k8s_err.h"
#include "op_cron.h"

struct op_schedule {
    bool set; /* spec.schedule is given */
    struct op_cron cron;
    bool suspend;
    bool allow; /* concurrencyPolicy Allow; Forbid (false) by default */
    int64_t keep_succeeded, keep_failed;
};

/* spec.schedule and its fields from a resource (borrowed). Not set when
 * spec.schedule is absent. -K8S_EINVAL naming the field. */
int op_schedule_parse(const json_t *obj, struct op_schedule *ret,
                      struct k8s_error *reterr) K8S_MUST_CHECK;

/* A child capture as the cache has it. */
struct op_child {
    const char *name;
    const char *phase; /* "" before its first status */
};

struct op_schedule_in {
    const json_t *parent;
    const struct op_schedule *sched;
    const struct op_child *children; /* the parent's, any order */
    size_t n;
    int64_t now_s; /* unix seconds */
};

struct op_schedule_plan {
    json_t *create;      /* a child to create (new), NULL: none */
    const char **remove; /* children to delete (names borrowed from the input) */
    size_t n_remove;
    json_t *status;  /* the parent's new status (new), NULL: as it is */
    int64_t after_s; /* look again in this many seconds; -1: on events only */
};

/* Decide for in into *out (op_schedule_done). -K8S_ENOMEM leaves *out
 * empty. */
int op_schedule_decide(const struct op_schedule_in *in,
                       struct op_schedule_plan *out) K8S_MUST_CHECK;

void op_schedule_done(struct op_schedule_plan *p);

/* The name of the child of parent for the tick at tick_s, into out. */
void op_schedule_child_name(const char *parent, int64_t tick_s, char *out, size_t cap);

#endif
