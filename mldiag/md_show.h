/*
 * md_show — what `kubectl mldiag` prints about MLDiagnosticsConnections,
 * from the objects alone (pure: the caller gives the clock): a follower's
 * progress lines, a capture's outcome (where the profiles are and the
 * xprof command that opens them, or what failed), `list`'s table and
 * `status`'s description, in kubectl's style.
 *
 * Thread-safety: reentrant. Ownership: every argument is borrowed.
 */
#ifndef MD_SHOW_H
#define MD_SHOW_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

/* The lines a change from prev (NULL: none seen yet) to now calls for: the
 * phase and message when either changed, and how many hosts are in each
 * phase when those counts changed. */
void md_show_progress(FILE *out, const json_t *prev, const json_t *now);

/* A finished capture: on Succeeded, each host's file, the output location
 * and how to open it with xprof (0); on Failed, the message and each
 * failed host's error, to err (1); otherwise nothing (-1). */
int md_show_outcome(FILE *out, FILE *err, const json_t *obj);

/* `list`: a header and one row per item of a list's items[];
 * all_namespaces adds a NAMESPACE column. */
void md_show_list(FILE *out, const json_t *list, int all_namespaces, int64_t now_s);

/* `status`: one resource described, with its hosts. */
void md_show_status(FILE *out, const json_t *obj, int64_t now_s);

/* "5s", "3m", "2h", "4d": the age kubectl prints for a timestamp. */
void md_show_age(const char *rfc3339, int64_t now_s, char out[16]);

#endif
