/* k8s_flags: Go flag-package syntax as the Helm charts pass it. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_flags.h"
#include "k8s_time.h"
#include "test_support.h"

struct vals {
    bool elect;
    bool verbose;
    const char *name;
    int64_t port;
    int64_t timeout;
    int64_t size;
    int64_t count;
};

static struct vals v;

#define AT(member) K8S_FLAG_AT(struct vals, member)

static const struct k8s_flag table[] = {
    {"leader-elect", K8S_FLAG_BOOL, AT(elect), "elect a leader"},
    {"verbose", K8S_FLAG_BOOL, AT(verbose), "chatty"},
    {"name", K8S_FLAG_STRING, AT(name), "a name"},
    {"port", K8S_FLAG_INT, AT(port), "port", 1, 65535},
    {"timeout", K8S_FLAG_DURATION, AT(timeout), "timeout", K8S_NSEC_PER_SEC,
     3600 * K8S_NSEC_PER_SEC},
    {"max-bytes", K8S_FLAG_BYTES, AT(size), "cap", 1024, 1LL << 30},
    {"n", K8S_FLAG_INT, AT(count), "unbounded count"},
    {NULL},
};

static void setup(void)
{
    v = (struct vals){.elect = false,
                      .verbose = true,
                      .name = "dflt",
                      .port = 8443,
                      .timeout = 5 * 60 * K8S_NSEC_PER_SEC,
                      .size = 8 << 20,
                      .count = 3};
}

/* Parse a NULL-terminated argument list (argv[0] is the program). */
static int parse(int *argi, struct k8s_error *err, char **argv)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    *argi = 1;
    return k8s_flags_parse(table, &v, argc, argv, argi, err);
}

#define ARGV(...) ((char *[]){"prog", __VA_ARGS__, NULL})

TestSuite(k8s_flags, .init = setup);

Test(k8s_flags, equals_form)
{
    int argi;
    struct k8s_error err = {0};
    cr_assert_eq(parse(&argi, &err, ARGV("--name=abc", "--port=9443", "--timeout=45m")), 0, "%s",
                 err.message);
    cr_expect_str_eq(v.name, "abc");
    cr_expect_eq(v.port, 9443);
    cr_expect_eq(v.timeout, 45 * 60 * K8S_NSEC_PER_SEC);
    cr_expect_eq(argi, 4);
}

Test(k8s_flags, separate_value_form)
{
    int argi;
    struct k8s_error err = {0};
    char **argv =
        ARGV("--name", "abc", "--port", "10", "--timeout", "0h59m30s", "--max-bytes", "64Ki");
    cr_assert_eq(parse(&argi, &err, argv), 0, "%s", err.message);
    cr_expect_eq(v.name, argv[2], "string flags borrow argv");
    cr_expect_eq(v.port, 10);
    cr_expect_eq(v.timeout, 3570 * K8S_NSEC_PER_SEC);
    cr_expect_eq(v.size, 65536);
    cr_expect_eq(argi, 9);
}

Test(k8s_flags, single_dash)
{
    int argi;
    cr_assert_eq(parse(&argi, NULL, ARGV("-name", "x", "-port=7", "-leader-elect")), 0);
    cr_expect_str_eq(v.name, "x");
    cr_expect_eq(v.port, 7);
    cr_expect(v.elect);
    cr_expect_eq(argi, 5);
}

Test(k8s_flags, one_letter_flag)
{
    int argi;
    cr_assert_eq(parse(&argi, NULL, ARGV("-n", "12")), 0);
    cr_expect_eq(v.count, 12);
    cr_assert_eq(parse(&argi, NULL, ARGV("--n=-4")), 0);
    cr_expect_eq(v.count, -4);
}

Test(k8s_flags, bare_bool_and_explicit_values)
{
    int argi;
    cr_assert_eq(parse(&argi, NULL, ARGV("--leader-elect", "--verbose=false")), 0);
    cr_expect(v.elect);
    cr_expect_not(v.verbose);
    const char *yes[] = {"1", "t", "T", "true", "TRUE", "True"};
    const char *no[] = {"0", "f", "F", "false", "FALSE", "False"};
    for (size_t i = 0; i < 6; i++) {
        char a[64], b[64];
        snprintf(a, sizeof(a), "--leader-elect=%s", yes[i]);
        snprintf(b, sizeof(b), "--verbose=%s", no[i]);
        v.elect = false;
        v.verbose = true;
        cr_assert_eq(parse(&argi, NULL, ARGV(a, b)), 0, "%s %s", a, b);
        cr_expect(v.elect, "%s", a);
        cr_expect_not(v.verbose, "%s", b);
    }
}

/* Go: a bool flag never consumes the next argument; "false" is then the
 * first positional argument. */
Test(k8s_flags, bare_bool_does_not_take_next_argument)
{
    int argi;
    cr_assert_eq(parse(&argi, NULL, ARGV("--verbose", "false", "--port=1")), 0);
    cr_expect(v.verbose);
    cr_expect_eq(argi, 2);
    cr_expect_eq(v.port, 8443, "parsing stops at the first positional");
}

Test(k8s_flags, invalid_bool)
{
    int argi;
    struct k8s_error err = {0};
    cr_assert_eq(parse(&argi, &err, ARGV("--leader-elect=yes")), -K8S_EINVAL);
    cr_expect_str_eq(err.message, "invalid value \"yes\" for flag --leader-elect");
    cr_expect_not(v.elect);
}

Test(k8s_flags, unknown_flag_named)
{
    int argi;
    struct k8s_error err = {0};
    cr_assert_eq(parse(&argi, &err, ARGV("--port=1", "--no-such-flag=3")), -K8S_EINVAL);
    cr_expect_str_eq(err.message, "unknown flag: --no-such-flag");
    cr_expect_eq(err.err, -K8S_EINVAL);
    memset(&err, 0, sizeof(err));
    cr_assert_eq(parse(&argi, &err, ARGV("-bogus")), -K8S_EINVAL);
    cr_expect_not_null(strstr(err.message, "bogus"), "%s", err.message);
    /* a prefix of a real flag is not that flag */
    memset(&err, 0, sizeof(err));
    cr_assert_eq(parse(&argi, &err, ARGV("--leader")), -K8S_EINVAL);
    cr_expect_str_eq(err.message, "unknown flag: --leader");
}

Test(k8s_flags, missing_argument)
{
    int argi;
    struct k8s_error err = {0};
    cr_assert_eq(parse(&argi, &err, ARGV("--port")), -K8S_EINVAL);
    cr_expect_str_eq(err.message, "flag needs an argument: --port");
    memset(&err, 0, sizeof(err));
    cr_assert_eq(parse(&argi, &err, ARGV("--name")), -K8S_EINVAL);
    cr_expect_str_eq(err.message, "flag needs an argument: --name");
    cr_expect_str_eq(v.name, "dflt");
}

Test(k8s_flags, bad_syntax)
{
    int argi;
    struct k8s_error err = {0};
    cr_assert_eq(parse(&argi, &err, ARGV("---port=1")), -K8S_EINVAL);
    cr_expect_str_eq(err.message, "bad flag syntax: ---port=1");
    memset(&err, 0, sizeof(err));
    cr_assert_eq(parse(&argi, &err, ARGV("--=1")), -K8S_EINVAL);
    cr_expect_str_eq(err.message, "bad flag syntax: --=1");
    cr_expect_eq(v.port, 8443);
}

Test(k8s_flags, double_dash_ends_flags)
{
    int argi;
    cr_assert_eq(parse(&argi, NULL, ARGV("--port=2", "--", "--name=x", "pos")), 0);
    cr_expect_eq(v.port, 2);
    cr_expect_str_eq(v.name, "dflt");
    cr_expect_eq(argi, 3, "argi points after \"--\"");
}

Test(k8s_flags, first_positional_stops)
{
    int argi;
    cr_assert_eq(parse(&argi, NULL, ARGV("--port=2", "inject", "--name=x")), 0);
    cr_expect_eq(argi, 2);
    cr_expect_str_eq(v.name, "dflt");
    /* a lone "-" (stdin) is positional */
    cr_assert_eq(parse(&argi, NULL, ARGV("-", "--port=3")), 0);
    cr_expect_eq(argi, 1);
    cr_expect_eq(v.port, 2);
}

Test(k8s_flags, start_index_respected)
{
    char *argv[] = {"prog", "inject", "--port=5", "-f", NULL};
    int argi = 2;
    cr_assert_eq(k8s_flags_parse(table, &v, 3, argv, &argi, NULL), 0);
    cr_expect_eq(v.port, 5);
    cr_expect_eq(argi, 3);
}

Test(k8s_flags, no_arguments)
{
    char *argv[] = {"prog", NULL};
    int argi = 1;
    cr_assert_eq(k8s_flags_parse(table, &v, 1, argv, &argi, NULL), 0);
    cr_expect_eq(argi, 1);
    cr_expect_eq(v.port, 8443);
}

Test(k8s_flags, range_limits_inclusive)
{
    int argi;
    struct k8s_error err = {0};
    cr_assert_eq(parse(&argi, &err, ARGV("--port=1")), 0);
    cr_expect_eq(v.port, 1);
    cr_assert_eq(parse(&argi, &err, ARGV("--port=65535")), 0);
    cr_expect_eq(v.port, 65535);
    cr_assert_eq(parse(&argi, &err, ARGV("--port=65536")), -K8S_EINVAL);
    cr_expect_str_eq(err.message, "value \"65536\" for flag --port is out of range");
    cr_expect_eq(v.port, 65535, "target untouched on failure");
    cr_assert_eq(parse(&argi, &err, ARGV("--port", "0")), -K8S_EINVAL);
    cr_expect_str_eq(err.message, "value \"0\" for flag --port is out of range");
    cr_assert_eq(parse(&argi, &err, ARGV("--timeout=1h")), 0);
    cr_expect_eq(v.timeout, 3600 * K8S_NSEC_PER_SEC);
    cr_assert_eq(parse(&argi, &err, ARGV("--timeout=61m")), -K8S_EINVAL);
    cr_expect_str_eq(err.message, "value \"61m\" for flag --timeout is out of range");
    cr_assert_eq(parse(&argi, &err, ARGV("--timeout=999ms")), -K8S_EINVAL);
    cr_assert_eq(parse(&argi, &err, ARGV("--max-bytes=1Ki")), 0);
    cr_expect_eq(v.size, 1024);
    cr_assert_eq(parse(&argi, &err, ARGV("--max-bytes=1023")), -K8S_EINVAL);
    cr_expect_str_eq(err.message, "value \"1023\" for flag --max-bytes is out of range");
    cr_expect_eq(v.size, 1024);
    /* min == max: no range */
    cr_assert_eq(parse(&argi, &err, ARGV("--n=-999999999999")), 0);
    cr_expect_eq(v.count, -999999999999LL);
}

Test(k8s_flags, invalid_values_named)
{
    int argi;
    struct k8s_error err = {0};
    cr_assert_eq(parse(&argi, &err, ARGV("--port=12x")), -K8S_EINVAL);
    cr_expect_str_eq(err.message, "invalid value \"12x\" for flag --port");
    cr_assert_eq(parse(&argi, &err, ARGV("--port=")), -K8S_EINVAL);
    cr_expect_str_eq(err.message, "invalid value \"\" for flag --port");
    cr_assert_eq(parse(&argi, &err, ARGV("--port=99999999999999999999")), -K8S_EINVAL);
    cr_assert_eq(parse(&argi, &err, ARGV("--timeout", "5x")), -K8S_EINVAL);
    cr_expect_str_eq(err.message, "invalid value \"5x\" for flag --timeout");
    cr_assert_eq(parse(&argi, &err, ARGV("--max-bytes=8MB")), -K8S_EINVAL);
    cr_expect_str_eq(err.message, "invalid value \"8MB\" for flag --max-bytes");
    cr_expect_eq(v.port, 8443);
    cr_expect_eq(v.timeout, 5 * 60 * K8S_NSEC_PER_SEC);
    cr_expect_eq(v.size, 8 << 20);
}

Test(k8s_flags, empty_string_value)
{
    int argi;
    cr_assert_eq(parse(&argi, NULL, ARGV("--name=")), 0);
    cr_expect_str_eq(v.name, "");
    /* a value that looks like a flag is still the value */
    cr_assert_eq(parse(&argi, NULL, ARGV("--name", "--port=4")), 0);
    cr_expect_str_eq(v.name, "--port=4");
    cr_expect_eq(v.port, 8443);
    cr_expect_eq(argi, 3);
}

Test(k8s_flags, help_returns_1)
{
    const char *forms[] = {"-h", "--h", "-help", "--help"};
    for (size_t i = 0; i < 4; i++) {
        int argi;
        char *argv[] = {"prog", "--port=3", (char *)forms[i], "--name=x", NULL};
        argi = 1;
        cr_expect_eq(k8s_flags_parse(table, &v, 4, argv, &argi, NULL), 1, "%s", forms[i]);
        cr_expect_str_eq(v.name, "dflt", "%s: parsing stops at help", forms[i]);
    }
}

struct seed_args {
    bool disable;
    const char *metrics, *probe;
    int64_t sidecar;
};

Test(k8s_flags, seed_operator_args)
{
    /* the seed's --set args, in the chart's list form */
    struct seed_args a = {false, ":8080", ":8081", 5 * 60 * K8S_NSEC_PER_SEC};
    static const struct k8s_flag t[] = {
        {"metrics-bind-address", K8S_FLAG_STRING, K8S_FLAG_AT(struct seed_args, metrics), ""},
        {"health-probe-bind-address", K8S_FLAG_STRING, K8S_FLAG_AT(struct seed_args, probe), ""},
        {"sidecar-timeout", K8S_FLAG_DURATION, K8S_FLAG_AT(struct seed_args, sidecar), ""},
        {"disable-hostname-override", K8S_FLAG_BOOL, K8S_FLAG_AT(struct seed_args, disable), ""},
        {NULL},
    };
    char *argv[] = {"op",
                    "--metrics-bind-address=:8443",
                    "--health-probe-bind-address=:8081",
                    "--sidecar-timeout=65m",
                    "--disable-hostname-override",
                    NULL};
    int argi = 1;
    cr_assert_eq(k8s_flags_parse(t, &a, 5, argv, &argi, NULL), 0);
    cr_expect_str_eq(a.metrics, ":8443");
    cr_expect_str_eq(a.probe, ":8081");
    cr_expect_eq(a.sidecar, 65 * 60 * K8S_NSEC_PER_SEC);
    cr_expect(a.disable);
    cr_expect_eq(argi, 5);
}

/* A flag whose initial value means "not given" prints no default. */
Test(k8s_flags, usage_without_a_default)
{
    struct {
        int64_t max;
    } unset = {-1};
    static const struct k8s_flag t[] = {
        {"max", K8S_FLAG_INT, 0, "at most this many (default: all)", 1, 10, K8S_FLAG_NO_DEFAULT},
        {"min", K8S_FLAG_INT, 0, "at least", 1, 10},
        {NULL}};
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    k8s_flags_usage(f, t, &unset);
    fclose(f);
    cr_expect_not_null(strstr(text, "at most this many (default: all)\n"), "%s", text);
    cr_expect_not_null(strstr(text, "at least (default -1)\n"), "%s", text);
    free(text);
}

Test(k8s_flags, usage_lines)
{
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    cr_assert_not_null(f);
    k8s_flags_usage(f, table, &v);
    fclose(f);
    cr_expect_not_null(strstr(text, "  --leader-elect"), "%s", text);
    cr_expect_not_null(strstr(text, "--port int"), "%s", text);
    cr_expect_not_null(strstr(text, "--timeout duration"), "%s", text);
    cr_expect_not_null(strstr(text, "--max-bytes bytes"), "%s", text);
    cr_expect_not_null(strstr(text, "--name string"), "%s", text);
    cr_expect_not_null(strstr(text, "  -n int"), "%s", text);
    cr_expect_not_null(strstr(text, "elect a leader\n"), "%s", text);
    /* defaults from the settings as initialised; zero values print none */
    cr_expect_not_null(strstr(text, "chatty (default true)\n"), "%s", text);
    cr_expect_not_null(strstr(text, "a name (default dflt)\n"), "%s", text);
    cr_expect_not_null(strstr(text, "port (default 8443)\n"), "%s", text);
    cr_expect_not_null(strstr(text, "timeout (default 5m0s)\n"), "%s", text);
    cr_expect_not_null(strstr(text, "cap (default 8Mi)\n"), "%s", text);
    cr_expect_not_null(strstr(text, "unbounded count (default 3)\n"), "%s", text);
    int lines = 0;
    for (char *p = text; *p; p++)
        lines += *p == '\n';
    cr_expect_eq(lines, 7);
    free(text);
}

struct bytes_case {
    const char *in;
    int64_t want;
};

Test(k8s_flags, bytes_parser)
{
    static const struct bytes_case ok[] = {
        {"8Mi", 8LL << 20},   {"64Ki", 64LL << 10}, {"1G", 1000000000LL},
        {"1Gi", 1LL << 30},   {"1024", 1024},       {"0", 0},
        {"2k", 2000},         {"3K", 3000},         {"5M", 5000000},
        {"8388608", 8388608},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        int64_t x = -1;
        cr_expect_eq(k8s_bytes_parse(ok[i].in, &x), 0, "%s", ok[i].in);
        cr_expect_eq(x, ok[i].want, "%s: got %lld", ok[i].in, (long long)x);
    }
    static const char *const bad[] = {"",    "Mi",   "-1",   "1.5Mi",
                                      "8MB", "8mi",  "8 Mi", "Ki8",
                                      "1Ti", "0x10", "8Mi ", "9223372036854775807Ki"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t x = 77;
        cr_expect_eq(k8s_bytes_parse(bad[i], &x), -K8S_EINVAL, "\"%s\" accepted (%lld)", bad[i],
                     (long long)x);
        cr_expect_eq(x, 77, "\"%s\"", bad[i]);
    }
}

Test(k8s_flags, json_of_the_settings_in_table_order)
{
    v.name = "x\"y";
    json_t *j = k8s_flags_json(table, &v);
    cr_assert_not_null(j);
    char *text = json_dumps(j, JSON_COMPACT);
    cr_expect_str_eq(text, "{\"leader-elect\":false,\"verbose\":true,\"name\":\"x\\\"y\","
                           "\"port\":8443,\"timeout\":\"5m0s\",\"max-bytes\":8388608,\"n\":3}");
    free(text);
    json_decref(j);
    cr_expect_eq(k8s_flags_count(table), 7);
}

struct cmd {
    const char *name;
    bool on;
};

Test(k8s_flags, a_command_prints_its_usage_and_refuses_positional_arguments)
{
    static const struct k8s_flag t[] = {
        {"name", K8S_FLAG_STRING, K8S_FLAG_AT(struct cmd, name), "the name"},
        {"on", K8S_FLAG_BOOL, K8S_FLAG_AT(struct cmd, on), "switch", .opts = K8S_FLAG_NO_JSON},
        {NULL},
    };
    struct cmd dflt = {"abc", false}, c = dflt;
    struct k8s_error err = {0};
    cr_assert_eq(k8s_flags_command(t, &c, &dflt, "Usage: x\n", 3, ARGV("--on", "extra"), 1, &err),
                 -K8S_EINVAL);
    cr_expect_str_eq(err.message, "unexpected argument: extra");
    cr_expect(c.on);
    json_t *j = k8s_flags_json(t, &c);
    cr_expect_null(json_object_get(j, "on"), "K8S_FLAG_NO_JSON");
    cr_expect_str_eq(json_string_value(json_object_get(j, "name")), "abc");
    json_decref(j);
}

struct selftest_cli {
    struct {
        int64_t timeout_ns, interval_ns;
    } o;
    const char *kubeconfig;
};

Test(k8s_flags, the_selftest_rows_set_the_members_named_and_keep_their_ranges)
{
    static const struct k8s_flag t[] = {
        K8S_FLAG_ROWS_SELFTEST(struct selftest_cli, o.timeout_ns, o.interval_ns, kubeconfig),
        {NULL},
    };
    cr_assert_eq(k8s_flags_count(t), 3);
    struct selftest_cli c = {{0, 0}, ""};
    struct k8s_error err = {0};
    int argi = 1;
    cr_assert_eq(
        k8s_flags_parse(t, &c, 7,
                        ARGV("--timeout=90s", "--interval", "1ms", "--kubeconfig", "/k", "x"),
                        &argi, &err),
        0, "%s", err.message);
    cr_expect_eq(c.o.timeout_ns, 90 * K8S_NSEC_PER_SEC);
    cr_expect_eq(c.o.interval_ns, K8S_NSEC_PER_MSEC);
    cr_expect_str_eq(c.kubeconfig, "/k");
    argi = 1;
    cr_expect_eq(k8s_flags_parse(t, &c, 2, ARGV("--interval=0s"), &argi, &err), -K8S_EINVAL);
    cr_expect_str_eq(err.message, "value \"0s\" for flag --interval is out of range");
    argi = 1;
    cr_expect_eq(k8s_flags_parse(t, &c, 2, ARGV("--timeout=2h"), &argi, &err), -K8S_EINVAL);
}
