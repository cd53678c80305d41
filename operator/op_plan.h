/*
 * op_plan — the capture reconciler's pure step (DESIGN §4.2, §4.3): from
 * what is known about one MLDiagnosticsConnection to what should happen.
 *
 * In: the resource (as cached, or as we last wrote it), a snapshot of its
 * target pods (resolved by the caller when a plan asked for it), this
 * process's record of its RPCs (none, in flight, results in,
 * interrupted), the clock, and the answers to the questions an earlier
 * plan asked (were the pods free to claim, does the API server agree a
 * target is absent).
 *
 * Out: an ordered list of effects, each reading its part of the plan
 * (the status to write, the batch to claim and send, the Event, log line
 * and metrics that follow a write, when to look again); op_capture
 * applies them in order, in one switch, and stops at the first that
 * fails. Three effects end a round with a question, after which the
 * caller decides again with the answer: OP_FX_RESOLVE (resolve spec's
 * targets from the caches), OP_FX_CONFIRM (is each of confirm[] absent?),
 * OP_FX_CLAIM when a pod is held (busy set); OP_FX_AGAIN decides again
 * from the object as written.
 *
 * The phases: (new) → Pending → Running → Succeeded | Failed, deletion
 * from any of them. The planner also names what the profilers write: the
 * host_name each request carries and the file it becomes. It does no
 * I/O, takes no lock, reads no cache and no clock: the same input gives
 * the same plan.
 *
 * Thread-safety: reentrant. Ownership: a plan owns what it points to
 * (op_plan_done), except what it borrows from in (the targets' addresses
 * and confirm[]), which must outlive it.
 */
#ifndef OP_PLAN_H
#define OP_PLAN_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "k8s_err.h"
#include "op_config.h"
#include "op_relay.h"
#include "op_spec.h"
#include "op_targets.h"

#define OP_BUSY_RECHECK_NS  (2 * K8S_NSEC_PER_SEC)
#define OP_WAIT_RECHECK_NS  (5 * K8S_NSEC_PER_SEC)
#define OP_CACHE_RECHECK_NS (K8S_NSEC_PER_SEC / 5)

/* This process's record of one resource. */
enum op_run_state {
    OP_RUN_NONE,       /* nothing in flight, no results */
    OP_RUN_LIVE,       /* RPCs in flight */
    OP_RUN_FINISHED,   /* results in, not written yet */
    OP_RUN_INTERRUPTED /* cancelled by shutdown: record as interrupted */
};

struct op_run_view {
    enum op_run_state state;
    const char *uid; /* of the resource the record is about; NULL: no record */
    /* FINISHED / INTERRUPTED: per host, in the order dispatched */
    const struct op_host_result *results;
    char *const *pods;  /* "ns/pod" */
    char *const *files; /* the profile each host writes */
    size_t n;
    int attempt;
    const char *session;  /* "YYYY_MM_DD_HH_MM_SS" */
    const char *location; /* <storage>/plugins/profile/<session> */
    size_t of;            /* spec.hosts chose the n from this many; 0: no choice */
};

enum op_absent { OP_ABSENT_UNASKED, OP_ABSENT_CONFIRMED, OP_ABSENT_FOUND };

struct op_plan_in {
    const json_t *obj; /* the resource (borrowed); NULL: gone */
    const struct op_config *cfg;
    /* the target pods of the plan's spec, as the caches had them (the
     * answer to OP_FX_RESOLVE); NULL: not resolved yet */
    const struct op_targets *targets;
    struct op_run_view run;
    int64_t now_ns; /* unix ns */
    bool stopping;  /* shutting down: dispatch nothing new */
    /* answers */
    const char *busy; /* the claim failed: "pod <pod> is busy with capture <name>" */
    enum op_absent absent;
};

enum op_outcome {
    OP_OUT_NONE,
    OP_OUT_SUCCEEDED,
    OP_OUT_FAILED,
    OP_OUT_INVALID,
    OP_OUT_INTERRUPTED
};

/* The effects. A plan lists them in the order they apply, which is not
 * this enum's: a dispatch is CLAIM, WRITE, SUBMIT, then EVENT, so that no
 * "Started" is posted for RPCs that could not be queued. */
enum op_effect {
    OP_FX_CANCEL,  /* drop the record of an earlier resource: cancel its RPCs
                    * (cancel_reason) when live, else forget it */
    OP_FX_FORGET,  /* drop the record (terminal, nothing in flight) */
    OP_FX_RESOLVE, /* resolve spec's target pods; decide again with them */
    OP_FX_CONFIRM, /* is each of confirm[] absent? decide again with the answer */
    OP_FX_CLAIM,   /* claim dispatch->pods; held by another: decide again with busy */
    OP_FX_WRITE,   /* write status through the status subresource */
    OP_FX_EVENT,   /* after the write: event's Event, log line and metrics */
    OP_FX_RELEASE, /* give up the pods */
    OP_FX_SUBMIT,  /* send dispatch's RPCs */
    OP_FX_AGAIN,   /* decide again from the object as written */
    OP_FX_REQUEUE, /* look again after after_ns */
    OP_FX_RETRY    /* failed (err): back off and retry */
};

#define OP_PLAN_FX_MAX 8

/* One capture attempt: claim pods, write status (Running), send batch. */
struct op_plan_dispatch {
    char session[20];
    char root[1100];     /* <storage>/plugins/profile */
    char location[1100]; /* <root>/<session> */
    int attempt;
    bool resumed; /* re-dispatch of a Running capture: a failure keeps its pods */
    size_t of;    /* spec.hosts chose the n from this many; 0: no choice */
    char **pods;  /* "ns/pod", n of them (the claim takes them) */
    char **files; /* <location>/<host file>.xplane.pb (the claim takes them) */
    size_t n;
    char **hosts; /* the host_name each request carries, n_hosts of them */
    size_t n_hosts;
    struct op_relay_target *targets;
    struct op_batch_spec batch; /* points into this struct and the input's targets */
    int64_t expected_ns;        /* how long the batch should take */
};

/* What follows a successful write. */
struct op_plan_event {
    const char *type, *reason; /* the Event's */
    char msg[4096];
    json_t *log; /* fields of the "capture" log line (new); NULL: none */
    enum op_outcome outcome;
    bool observe_rpcs;   /* count the results' RPCs in the metrics */
    int64_t duration_ns; /* start to outcome, < 0 unknown */
};

struct op_plan {
    enum op_effect fx[OP_PLAN_FX_MAX]; /* in order */
    size_t n_fx;
    /* what the effects read */
    const char *cancel_reason; /* OP_FX_CANCEL */
    char *const *confirm;      /* OP_FX_CONFIRM: API paths, n_confirm */
    size_t n_confirm;
    struct op_plan_dispatch *dispatch; /* OP_FX_CLAIM, OP_FX_SUBMIT */
    json_t *status;                    /* OP_FX_WRITE (new) */
    struct op_plan_event event;        /* OP_FX_EVENT */
    int64_t after_ns;                  /* OP_FX_REQUEUE */
    struct k8s_error err;              /* OP_FX_RETRY */
    struct op_spec spec;               /* OP_FX_RESOLVE: whose targets */
    bool has_spec;
};

/* Does p list effect e? */
bool op_plan_has(const struct op_plan *p, enum op_effect e);

/* Decide what to do for in; *out owns what it says (op_plan_done). */
void op_plan_decide(const struct op_plan_in *in, struct op_plan *out);

void op_plan_done(struct op_plan *p);

/* Session id for a start time: "YYYY_MM_DD_HH_MM_SS" (UTC). */
void op_session_id(time_t start, char out[static 20]);

/* Is phase Succeeded or Failed? */
bool op_phase_terminal(const char *phase);

#endif
