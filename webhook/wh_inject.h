/*
 * wh_inject — the offline `inject` command (DESIGN §3.6): read YAML or
 * JSON (one or many documents: a Pod, a List, or any kind whose pod
 * templates the kind table, k8s_kinds, locates), run the same mutation
 * core as the server over every pod and pod template (the workload is the
 * document itself), and print the result in the input's format, or the
 * RFC 6902 patch (--patch), or why each pod would or would not be
 * injected (--explain).
 *
 * The processing core (wh_inject_doc) is pure and separate from the
 * command's I/O so tests can call it directly.
 * Thread-safety: reentrant.
 */
#ifndef WH_INJECT_H
#define WH_INJECT_H

#include <jansson.h>
#include <time.h>

#include "k8s_buf.h"
#include "k8s_err.h"
#include "wh_config.h"

/* The command: `mldiagnostics-webhook inject ...`, flags from argv[argi].
 * Returns the process exit code. */
int wh_inject_main(int argc, char **argv, int argi);

/* Mutate one document. *ret_patch: a NEW array with every operation for
 * the document (paths relative to it); `explain` gets one line per pod
 * or template (may be NULL). ns overrides a missing metadata.namespace.
 * Unsupported kinds yield an empty patch and an explanation. -K8S_ENOMEM
 * only. */
int wh_inject_doc(const struct wh_config *cfg, const json_t *doc, const char *ns, time_t now,
                  json_t **ret_patch, struct k8s_buf *explain) K8S_MUST_CHECK;

#endif
