/*
 * op_plan — the capture reconciler's pure step (DESIGN §4.2, §4.3): from
 * what is known about one MLDiagnosticsConnection to what should happen.
 *
 * In: the resource (as cached, or as we last wrote it), its target pods in
 * the caches, this process's record of its RPCs (none, in flight, results
 * in, interrupted), the clock, and the answers to the questions an earlier
 * plan asked (were the pods free to claim, does the API server agree a
 * target is absent). Out: the status to write, the RPCs to cancel or to
 * send (with the pods to claim first), the Event, log line and metric that
 * follow a successful write, and when to look again.
 *
 * The phases: (new) → Pending → Running → Succeeded | Failed, deletion
 * from any of them. A plan either answers (result) or asks: OP_ASK_CLAIM
 * (claim dispatch->pods; on a conflict decide again with busy set),
 * OP_ASK_CONFIRM (is each of confirm[] absent? decide again with the
 * answer), or again (after writing status, decide again from the written
 * object). op_capture applies plans; this module does no I/O, takes no
 * lock and reads no clock: the same input gives the same plan.
 *
 * Thread-safety: reentrant. Ownership: a plan owns what it points to
 * (op_plan_done), except the strings of in it borrows (none outlive in).
 */
#ifndef OP_PLAN_H
#define OP_PLAN_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "k8s_err.h"
#include "k8s_manager.h"
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
};

enum op_absent { OP_ABSENT_UNASKED, OP_ABSENT_CONFIRMED, OP_ABSENT_FOUND };

struct op_plan_in {
    const json_t *obj; /* the resource (borrowed); NULL: gone */
    const struct op_config *cfg;
    const struct op_stores *stores; /* the target pods and workloads */
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

enum op_ask { OP_ASK_NONE, OP_ASK_CLAIM, OP_ASK_CONFIRM };

/* One capture attempt: claim pods, write status (Running), send batch. */
struct op_plan_dispatch {
    char session[20];
    char root[1100];     /* <storage>/plugins/profile */
    char location[1100]; /* <root>/<session> */
    int attempt;
    bool resumed; /* re-dispatch of a Running capture: a failure keeps its pods */
    char **pods;  /* "ns/pod", n of them */
    char **files; /* <location>/<host file>.xplane.pb */
    struct op_relay_target *targets;
    size_t n;
    struct op_batch_spec batch; /* points into this struct and the plan */
    int64_t expected_ns;        /* how long the batch should take */
};

struct op_plan {
    enum k8s_result result;
    int64_t after_ns; /* K8S_REQUEUE_AFTER */
    enum op_ask ask;
    /* first, drop the record of an earlier resource: cancel its RPCs
     * (cancel_reason) when live, else forget it */
    bool drop;
    const char *cancel_reason;
    bool forget;                       /* drop the record now (terminal, nothing in flight) */
    json_t *status;                    /* new: write it; NULL: nothing to write */
    bool again;                        /* after the write, decide again from the written object */
    bool release;                      /* after the write, give up the pods */
    struct op_plan_dispatch *dispatch; /* OP_ASK_CLAIM */
    char *const *confirm;              /* OP_ASK_CONFIRM: API paths, n_confirm */
    size_t n_confirm;
    /* after a successful write */
    const char *event_type, *event_reason; /* NULL: no Event */
    char event_msg[4096];
    json_t *log; /* fields of the "capture" log line (new); NULL: none */
    enum op_outcome outcome;
    bool observe_rpcs;    /* count the results' RPCs in the metrics */
    int64_t duration_ns;  /* start to outcome, < 0 unknown */
    struct k8s_error err; /* result K8S_RETRY: why */
    /* owned */
    struct op_spec spec;
    bool has_spec;
    struct op_targets targets;
    bool has_targets;
};

/* Decide what to do for in; *out owns what it says (op_plan_done). */
void op_plan_decide(const struct op_plan_in *in, struct op_plan *out);

void op_plan_done(struct op_plan *p);

/* Session id for a start time: "YYYY_MM_DD_HH_MM_SS" (UTC). */
void op_session_id(time_t start, char out[static 20]);

/* Is phase Succeeded or Failed? */
bool op_phase_terminal(const char *phase);

#endif
