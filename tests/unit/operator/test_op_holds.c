/* op_holds: all-or-nothing claims of pods, the message naming the pod and
 * its holder, re-claims replacing a set, release, growth, and of several
 * threads claiming one pod at the same instant exactly one winning. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "op_holds.h"

static int a, b, c; /* holders: only their addresses matter */

Test(op_holds, all_or_nothing_and_the_message_names_pod_and_holder)
{
    struct op_holds *h = op_holds_new();
    char *first[] = {"ml/p0", "ml/p1"}, *second[] = {"ml/p2", "ml/p1"}, *third[] = {"ml/p2"};
    struct k8s_error err = {0};
    cr_assert_eq(op_holds_claim(h, &a, "ml/first", first, 2, &err), 0);
    cr_assert_eq(op_holds_claim(h, &b, "ml/second", second, 2, &err), -K8S_ECONFLICT);
    cr_assert_str_eq(err.message, "pod p1 is busy with capture ml/first");
    cr_assert_eq(op_holds_count(h), 2, "nothing of the refused claim was taken");
    cr_assert_eq(op_holds_claim(h, &c, "ml/third", third, 1, &err), 0);
    cr_assert_eq(op_holds_claim(h, &a, "ml/first", first, 2, &err), 0, "its own pods");
    op_holds_release(h, &a);
    cr_assert_eq(op_holds_claim(h, &b, "ml/second", second, 2, &err), -K8S_ECONFLICT);
    cr_assert_str_eq(err.message, "pod p2 is busy with capture ml/third");
    op_holds_release(h, &c);
    cr_assert_eq(op_holds_claim(h, &b, "ml/second", second, 2, &err), 0);
    op_holds_free(h);
}

Test(op_holds, a_new_claim_replaces_the_holders_set)
{
    struct op_holds *h = op_holds_new();
    char *before[] = {"ml/p0", "ml/p1", "ml/p0"}, *after[] = {"ml/p1", "ml/p2"};
    char *p0[] = {"ml/p0"}, *p1[] = {"ml/p1"};
    cr_assert_eq(op_holds_claim(h, &a, "ml/a", before, 3, NULL), 0);
    cr_assert_eq(op_holds_count(h), 2, "a pod listed twice is held once");
    cr_assert_eq(op_holds_claim(h, &a, "ml/a", after, 2, NULL), 0);
    cr_assert_eq(op_holds_count(h), 2);
    cr_assert_eq(op_holds_claim(h, &b, "ml/b", p0, 1, NULL), 0, "p0 was given up");
    cr_assert_eq(op_holds_claim(h, &b, "ml/b", p1, 1, NULL), -K8S_ECONFLICT);
    op_holds_release(h, &c); /* holds nothing: a no-op */
    op_holds_release(h, &a);
    op_holds_release(h, &a);
    cr_assert_eq(op_holds_count(h), 1);
    op_holds_free(h);
}

Test(op_holds, thousands_of_pods)
{
    enum { N = 5000 };
    struct op_holds *h = op_holds_new();
    char **pods = calloc(N, sizeof(*pods));
    for (int i = 0; i < N; i++)
        cr_assert(asprintf(&pods[i], "ml/worker-%d", i) > 0);
    cr_assert_eq(op_holds_claim(h, &a, "ml/big", pods, N, NULL), 0);
    cr_assert_eq(op_holds_count(h), N);
    struct k8s_error err = {0};
    cr_assert_eq(op_holds_claim(h, &b, "ml/late", pods + N - 1, 1, &err), -K8S_ECONFLICT);
    cr_assert_str_eq(err.message, "pod worker-4999 is busy with capture ml/big");
    op_holds_release(h, &a);
    cr_assert_eq(op_holds_count(h), 0);
    cr_assert_eq(op_holds_claim(h, &b, "ml/late", pods, N, NULL), 0);
    for (int i = 0; i < N; i++)
        free(pods[i]);
    free(pods);
    op_holds_free(h); /* frees what is still held */
}

enum { THREADS = 8, ROUNDS = 200 };

struct racer {
    struct op_holds *h;
    pthread_barrier_t *go;
    int wins;
};

static void *race(void *arg)
{
    struct racer *r = arg;
    char name[32], *pods[] = {"ml/shared", "ml/other"};
    snprintf(name, sizeof(name), "ml/racer-%p", arg);
    for (int i = 0; i < ROUNDS; i++) {
        pthread_barrier_wait(&r->go[0]); /* all claim at once */
        if (op_holds_claim(r->h, r, name, pods, 2, NULL) == 0)
            r->wins++;
        pthread_barrier_wait(&r->go[1]); /* the round is over */
        op_holds_release(r->h, r);
        pthread_barrier_wait(&r->go[2]); /* everything released */
    }
    return NULL;
}

Test(op_holds, of_claims_at_the_same_instant_one_wins)
{
    struct op_holds *h = op_holds_new();
    pthread_barrier_t go[3];
    for (int i = 0; i < 3; i++)
        pthread_barrier_init(&go[i], NULL, THREADS);
    struct racer r[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        r[i] = (struct racer){h, go, 0};
        pthread_create(&t[i], NULL, race, &r[i]);
    }
    int wins = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        wins += r[i].wins;
    }
    cr_assert_eq(wins, ROUNDS, "exactly one winner per round");
    for (int i = 0; i < 3; i++)
        pthread_barrier_destroy(&go[i]);
    op_holds_free(h);
}
