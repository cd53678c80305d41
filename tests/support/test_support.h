/*
 * test_support — fixture loading for the Criterion suites, and the fake API
 * server as a subprocess. Fixtures live in files under tests/fixtures
 * (MLD_FIXTURES), never in C strings.
 * Every function aborts the test (cr_assert) on failure.
 */
#ifndef TEST_SUPPORT_H
#define TEST_SUPPORT_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* Absolute path of a fixture; new string (free()). */
char *ts_fixture_path(const char *rel);
/* Whole file contents, NUL-terminated; new buffer (free()). */
char *ts_read_fixture(const char *rel, size_t *ret_len);
/* Parse a JSON fixture; new reference. */
json_t *ts_load_json(const char *rel);
/* For each file of the fixture folder dir_rel whose name ends in suffix,
 * in name order: fn(its JSON document (borrowed for the call), its file
 * name, arg). Returns how many files it read. */
int ts_each_json(const char *dir_rel, const char *suffix,
                 void (*fn)(json_t *doc, const char *name, void *arg), void *arg);

/* The fake API server (tests/fakes/serve.py) as a subprocess: start waits
 * for its port; a command waits for its "ok"; stop closes its stdin (it
 * stops) and reaps it. */
struct ts_fake {
    pid_t pid;
    FILE *in, *out;
    int port;
};
void ts_fake_start(struct ts_fake *f);
void ts_fake_command(struct ts_fake *f, const char *cmd);
void ts_fake_stop(struct ts_fake *f);

#endif
