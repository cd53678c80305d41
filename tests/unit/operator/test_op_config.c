/* op_config: every §4.4 flag, Go syntax, defaults, errors naming the flag. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_time.h"
#include "op_config.h"

#define SEC K8S_NSEC_PER_SEC

static int parse(struct op_config *c, int argc, char **argv, struct k8s_error *err)
{
    int argi = 1;
    op_config_init(c);
    int r = op_config_parse_flags(c, argc, argv, &argi, err);
    return r ? r : op_config_finish(c, err);
}

Test(op_config, defaults)
{
    struct op_config c;
    char *argv[] = {"op"};
    unsetenv("POD_NAME");
    cr_assert_eq(parse(&c, 1, argv, NULL), 0);
    cr_assert_not(c.leader_elect);
    cr_assert_str_eq(c.health_probe_bind_address, ":8081");
    cr_assert_str_eq(c.metrics_bind_address, ":8080");
    cr_assert_eq(c.sidecar_timeout_ns, 300 * SEC);
    cr_assert_eq(c.capture_max_retries, 3);
    cr_assert_eq(c.max_capture_duration_ns, 3600 * SEC);
    cr_assert_str_eq(c.lease_name, "mldiagnostics-connection-operator");
    cr_assert_str_eq(c.lease_namespace, "gke-mldiagnostics", "not in a pod");
    cr_assert(strchr(c.identity, '_'), "hostname_pid: %s", c.identity);
    op_config_done(&c);
}

Test(op_config, the_seed_chart_args)
{
    struct op_config c;
    char *argv[] = {"op",
                    "--metrics-bind-address=:8443",
                    "--health-probe-bind-address=:8081",
                    "--sidecar-timeout=65m",
                    "--disable-hostname-override",
                    "--leader-elect",
                    "--capture-max-retries",
                    "5",
                    "--max-capture-duration=1h30m",
                    "--namespace=ml",
                    "--allow-cross-namespace=true",
                    "--leader-election-namespace",
                    "ops",
                    "--leader-election-id=x",
                    "-v=4"};
    setenv("POD_NAME", "op-7d9f-abc", 1);
    cr_assert_eq(parse(&c, sizeof(argv) / sizeof(argv[0]), argv, NULL), 0);
    cr_assert_str_eq(c.metrics_bind_address, ":8443");
    cr_assert_eq(c.sidecar_timeout_ns, 65 * 60 * SEC);
    cr_assert(c.disable_hostname_override);
    cr_assert(c.leader_elect);
    cr_assert(c.allow_cross_namespace);
    cr_assert_eq(c.capture_max_retries, 5);
    cr_assert_eq(c.max_capture_duration_ns, 5400 * SEC);
    cr_assert_str_eq(c.namespace, "ml");
    cr_assert_str_eq(c.lease_namespace, "ops");
    cr_assert_str_eq(c.lease_name, "x");
    cr_assert_str_eq(c.identity, "op-7d9f-abc");
    cr_assert_eq(c.verbosity, 4);
    op_config_done(&c);
    unsetenv("POD_NAME");
}

Test(op_config, errors_name_the_flag)
{
    static const struct {
        const char *arg, *want;
    } bad[] = {
        {"--sidecar-timeout=5", "--sidecar-timeout"},
        {"--sidecar-timeout=soon", "--sidecar-timeout"},
        {"--capture-max-retries=-1", "--capture-max-retries"},
        {"--frobnicate", "--frobnicate"},
        {"--metrics-bind-address=localhost", "--metrics-bind-address"},
        {"--health-probe-bind-address=:99999", "--health-probe-bind-address"},
        {"--leader-election-id=", "--leader-election-id"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct op_config c;
        struct k8s_error err = {0};
        char *argv[] = {"op", (char *)bad[i].arg};
        cr_assert_eq(parse(&c, 2, argv, &err), -K8S_EINVAL, "%s accepted", bad[i].arg);
        cr_assert(strstr(err.message, bad[i].want), "%s: %s", bad[i].arg, err.message);
        op_config_done(&c);
    }
}

Test(op_config, bind_addresses)
{
    char host[64];
    int port;
    cr_assert_eq(op_parse_bind("f", ":8080", host, sizeof(host), &port, NULL), 0);
    cr_assert_str_eq(host, "");
    cr_assert_eq(port, 8080);
    cr_assert_eq(op_parse_bind("f", "127.0.0.1:0", host, sizeof(host), &port, NULL), 0);
    cr_assert_str_eq(host, "127.0.0.1");
    cr_assert_eq(port, 0);
    cr_assert_eq(op_parse_bind("f", "[::1]:9090", host, sizeof(host), &port, NULL), 0);
    cr_assert_str_eq(host, "::1");
    cr_assert_eq(op_parse_bind("f", "8081", host, sizeof(host), &port, NULL), 0);
    cr_assert_eq(port, 8081);
    cr_assert_eq(op_parse_bind("f", "host:", host, sizeof(host), &port, NULL), -K8S_EINVAL);
}

Test(op_config, go_duration_format)
{
    char out[32];
    k8s_duration_format(3600 * SEC, out);
    cr_assert_str_eq(out, "1h0m0s");
    k8s_duration_format(65 * 60 * SEC, out);
    cr_assert_str_eq(out, "1h5m0s");
    k8s_duration_format(1500 * K8S_NSEC_PER_MSEC, out);
    cr_assert_str_eq(out, "1.5s");
    k8s_duration_format(300 * K8S_NSEC_PER_MSEC, out);
    cr_assert_str_eq(out, "300ms");
    k8s_duration_format(0, out);
    cr_assert_str_eq(out, "0s");
}

Test(op_config, resync_period)
{
    struct op_config c;
    char *none[] = {"op"};
    cr_assert_eq(parse(&c, 1, none, NULL), 0);
    cr_assert_eq(c.resync_period_ns, 300 * SEC, "the safety net is on by default: 5m");
    json_t *j = op_config_json(&c);
    cr_assert_str_eq(json_string_value(json_object_get(j, "resync-period")), "5m0s");
    json_decref(j);
    op_config_done(&c);
    char *off[] = {"op", "--resync-period=0"};
    cr_assert_eq(parse(&c, 2, off, NULL), 0);
    cr_assert_eq(c.resync_period_ns, 0, "0 turns it off");
    op_config_done(&c);
    char *some[] = {"op", "--resync-period", "90s"};
    cr_assert_eq(parse(&c, 3, some, NULL), 0);
    cr_assert_eq(c.resync_period_ns, 90 * SEC);
    op_config_done(&c);
    struct k8s_error err;
    char *bad[] = {"op", "--resync-period=-1s"};
    cr_assert_eq(parse(&c, 2, bad, &err), -K8S_EINVAL);
    cr_assert(strstr(err.message, "--resync-period"), "%s", err.message);
}
