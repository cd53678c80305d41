/*
 * wh_reaper — closes connections that have not sent their first request's
 * headers within a deadline of being accepted (--handshake-timeout).
 *
 * Why: libmicrohttpd's connection timeout never fires for a TLS connection
 * whose handshake has not completed, so a client that connects and sends
 * nothing, or a ClientHello and nothing after, or trickles its handshake,
 * would hold a connection slot and a descriptor for as long as it likes
 * (a slowloris). The reaper bounds that time from the accept, whatever the
 * client trickles. At the connection cap it also makes room: the oldest
 * such connection gives way to a new one.
 *
 * How: each new connection's entry (embedded in the caller's per-connection
 * state) goes on one list in accept order, which is deadline order as every
 * entry has the same timeout; a thread wakes every quarter of a second and
 * shuts down (shutdown(2), never close) the socket of each entry past its
 * deadline: the server's event loop then reads the end of the stream and
 * closes the connection in its own way. An entry leaves the list at the
 * first request or when the connection closes, whichever comes first;
 * because the server removes the entry before it closes the descriptor and
 * the reaper shuts sockets down only under the same lock, it never touches
 * a descriptor that was closed and reused.
 *
 * Thread-safety: add and remove from any thread; free after every entry
 * was removed or its connection closed.
 */
#ifndef WH_REAPER_H
#define WH_REAPER_H

#include <stdbool.h>
#include <stdint.h>

#include "k8s_err.h"

struct wh_reaper_entry {
    int fd;
    int64_t deadline_ns; /* k8s_mono_ns */
    struct wh_reaper_entry *prev, *next;
    bool listed;
};

struct wh_reaper;

/* Start the reaper's thread. *ret is new (wh_reaper_free); -K8S_ENOMEM or
 * -K8S_EIO (no thread) and *ret untouched on failure. */
int wh_reaper_new(int64_t timeout_ns, struct wh_reaper **ret) K8S_MUST_CHECK;

/* Stop the thread and free. NULL-safe. */
void wh_reaper_free(struct wh_reaper *r);

/* Watch fd from now on, through e (borrowed: it must stay valid until
 * wh_reaper_remove). NULL-safe in r. */
void wh_reaper_add(struct wh_reaper *r, struct wh_reaper_entry *e, int fd);

/* Stop watching e (its first request came, or its connection is closing).
 * Idempotent; NULL-safe in r. */
void wh_reaper_remove(struct wh_reaper *r, struct wh_reaper_entry *e);

/* At the connection cap: shut down the oldest connection still waiting for
 * its first request, if it has waited WH_REAPER_MIN_WAIT_NS or more (true),
 * so that a new connection can take its place. A client that sends its
 * request promptly is never one; idle and half-open connections make room
 * oldest first. The minimum wait keeps a flood of new connections from
 * evicting each other (and a real client's, mid-handshake): during one,
 * at most the connections held a second or more give way. */
#define WH_REAPER_MIN_WAIT_NS 1000000000LL
bool wh_reaper_evict_oldest(struct wh_reaper *r, int64_t now_ns);

/* Connections shut down past their deadline or evicted, so far. */
uint64_t wh_reaper_reaped(const struct wh_reaper *r);

/* One sweep at now_ns, for tests (the thread calls it too). Returns how
 * many it shut down. */
int wh_reaper_sweep(struct wh_reaper *r, int64_t now_ns);

#endif
