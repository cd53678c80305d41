/* wh_reaper: connections without a first request are shut down at their
 * deadline, oldest first, and at the cap the oldest gives way; a removed
 * entry is never touched. Sockets are socketpairs: a shut-down end reads
 * as end-of-stream on the peer. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "k8s_time.h"
#include "wh_reaper.h"

#define N 4

static int ours[N], peers[N];
static struct wh_reaper_entry e[N];

static void pairs(void)
{
    for (int i = 0; i < N; i++) {
        int sv[2];
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
        ours[i] = sv[0];
        peers[i] = sv[1];
        cr_assert_eq(fcntl(peers[i], F_SETFL, O_NONBLOCK), 0);
    }
}

static void unpairs(void)
{
    for (int i = 0; i < N; i++) {
        close(ours[i]);
        close(peers[i]);
    }
}

TestSuite(reaper, .init = pairs, .fini = unpairs);

/* Did the peer of i see its socket shut down (end of stream)? */
static bool shut(int i)
{
    char c;
    return read(peers[i], &c, 1) == 0;
}

static struct wh_reaper *reaper(int64_t timeout_ns)
{
    struct wh_reaper *r = NULL;
    cr_assert_eq(wh_reaper_new(timeout_ns, &r), 0);
    return r;
}

Test(reaper, due_entries_are_shut_down_and_removed_ones_are_not)
{
    struct wh_reaper *r = reaper(3600 * K8S_NSEC_PER_SEC); /* the thread never reaps */
    for (int i = 0; i < N; i++)
        wh_reaper_add(r, &e[i], ours[i]);
    wh_reaper_remove(r, &e[1]); /* its first request came */
    wh_reaper_remove(r, &e[1]); /* idempotent */
    cr_assert_eq(wh_reaper_sweep(r, k8s_mono_ns()), 0, "nothing is due yet");
    cr_assert_eq(wh_reaper_sweep(r, k8s_mono_ns() + 3601 * K8S_NSEC_PER_SEC), N - 1);
    cr_assert(shut(0) && shut(2) && shut(3));
    cr_assert_not(shut(1), "a connection that sent its request is left alone");
    cr_assert_not(e[0].listed, "a reaped entry is off the list");
    wh_reaper_remove(r, &e[0]); /* its connection closes afterwards: a no-op */
    cr_assert_eq(wh_reaper_reaped(r), N - 1);
    wh_reaper_free(r);
}

Test(reaper, at_the_cap_the_oldest_waiting_connection_gives_way)
{
    struct wh_reaper *r = reaper(3600 * K8S_NSEC_PER_SEC);
    for (int i = 0; i < N; i++)
        wh_reaper_add(r, &e[i], ours[i]);
    wh_reaper_remove(r, &e[0]);
    int64_t now = k8s_mono_ns();
    cr_assert_not(wh_reaper_evict_oldest(r, now), "none has waited a second yet");
    cr_assert_not(shut(1));
    now += WH_REAPER_MIN_WAIT_NS;
    cr_assert(wh_reaper_evict_oldest(r, now));
    cr_assert(shut(1), "the oldest still waiting");
    cr_assert_not(shut(0) || shut(2) || shut(3));
    cr_assert(wh_reaper_evict_oldest(r, now) && wh_reaper_evict_oldest(r, now));
    cr_assert_not(wh_reaper_evict_oldest(r, now), "none left waiting: the new one is refused");
    cr_assert_not(shut(0));
    wh_reaper_free(r);
}

Test(reaper, the_thread_reaps_at_the_deadline)
{
    struct wh_reaper *r = reaper(K8S_NSEC_PER_SEC / 10);
    wh_reaper_add(r, &e[0], ours[0]);
    int64_t deadline = k8s_mono_ns() + 30 * K8S_NSEC_PER_SEC; /* bound of a failing run */
    while (!shut(0) && k8s_mono_ns() < deadline)
        usleep(10 * 1000);
    cr_assert_eq(wh_reaper_reaped(r), 1);
    wh_reaper_free(r);
}

Test(reaper, null_is_no_reaper)
{
    wh_reaper_add(NULL, &e[0], ours[0]);
    wh_reaper_remove(NULL, &e[0]);
    cr_assert_not(wh_reaper_evict_oldest(NULL, 0));
    cr_assert_eq(wh_reaper_reaped(NULL), 0);
    wh_reaper_free(NULL);
}
