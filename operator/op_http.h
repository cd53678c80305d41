/*
 * op_http — the operator's plain-HTTP listeners (libmicrohttpd, one
 * internal thread each): /healthz (the process is alive), /readyz (every
 * cache has synced; leader and followers alike), /metrics (Prometheus
 * text). Both --health-probe-bind-address and --metrics-bind-address
 * serve all three paths.
 *
 * Thread-safety: start/stop from main; handlers run on the listener's
 * thread and only read the registry and the ready callback.
 */
#ifndef OP_HTTP_H
#define OP_HTTP_H

#include <stdbool.h>

#include "k8s_err.h"
#include "k8s_metrics.h"

typedef bool (*op_ready_fn)(void *ud, char *why, size_t cap);

struct op_http;

/* Listen on addr ("host:port", ":port"; see op_parse_bind); flag names the
 * flag for messages. -K8S_EIO with reterr naming address and cause. */
int op_http_start(const char *flag, const char *addr, struct k8s_metrics *m, op_ready_fn ready,
                  void *ud, struct op_http **ret, struct k8s_error *reterr) K8S_MUST_CHECK;

/* The bound port (useful with port 0). */
int op_http_port(const struct op_http *h);

void op_http_free(struct op_http *h);

#endif
