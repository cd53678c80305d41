/* kubeconfig and in-cluster configuration. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_config.h"
#include "test_support.h"

Test(k8s_config, current_context_token_and_token_file)
{
    char *path = ts_fixture_path("kubeconfig/full.yaml");
    struct k8s_config c;
    struct k8s_error err;
    cr_assert_eq(k8s_config_from_kubeconfig(path, NULL, &c, &err), 0, "%s", err.message);
    cr_assert_str_eq(c.server, "http://127.0.0.1:8001");
    cr_assert(c.insecure);
    cr_assert_str_eq(c.tls_server_name, "api.dev");
    cr_assert_str_eq(c.token, "dev-token-123");
    cr_assert(strstr(c.token_file, "/kubeconfig/tokens/dev"), "relative to the file: %s",
              c.token_file);
    cr_assert_str_eq(c.namespace, "default");
    cr_assert(strstr(c.source, "context dev"));
    k8s_config_done(&c);
    free(path);
}

Test(k8s_config, named_context_ca_data_and_client_cert_files)
{
    char *path = ts_fixture_path("kubeconfig/full.yaml");
    struct k8s_config c;
    struct k8s_error err;
    cr_assert_eq(k8s_config_from_kubeconfig(path, "prod", &c, &err), 0, "%s", err.message);
    cr_assert_str_eq(c.server, "https://10.0.0.1:6443", "trailing slash dropped");
    cr_assert(strstr(c.ca_pem, "BEGIN CERTIFICATE-----\nca\n"), "base64 data decoded");
    cr_assert(strstr(c.cert_pem, "client"));
    cr_assert(strstr(c.key_pem, "key"));
    cr_assert_str_eq(c.namespace, "ml");
    cr_assert_not(c.insecure);
    struct k8s_config copy;
    cr_assert_eq(k8s_config_copy(&c, &copy), 0);
    cr_assert_str_eq(copy.key_pem, c.key_pem);
    k8s_config_done(&copy);
    k8s_config_done(&c);
    free(path);
}

/* A user's exec credential plugin (tests/fixtures/kubeconfig/plugins/),
 * run as client-go runs it: relative to the kubeconfig, its args and env,
 * told it is not interactive. */
Test(k8s_config, exec_plugins_give_a_token_or_a_certificate)
{
    char *path = ts_fixture_path("kubeconfig/exec-token.yaml");
    struct k8s_config c;
    struct k8s_error err = {0};
    cr_assert_eq(k8s_config_from_kubeconfig(path, NULL, &c, &err), 0, "%s", err.message);
    cr_assert_str_eq(c.token, "exec-token-from-env");
    k8s_config_done(&c);
    free(path);
    path = ts_fixture_path("kubeconfig/exec-cert.yaml");
    cr_assert_eq(k8s_config_from_kubeconfig(path, NULL, &c, &err), 0, "%s", err.message);
    cr_assert_null(c.token);
    cr_assert(strstr(c.cert_pem, "BEGIN CERTIFICATE-----\nexec\n"), "%s", c.cert_pem);
    cr_assert(strstr(c.key_pem, "BEGIN EC PRIVATE KEY"));
    k8s_config_done(&c);
    free(path);
}

Test(k8s_config, exec_plugin_failures_name_the_plugin)
{
    static const struct {
        const char *file, *why;
    } cases[] = {
        {"kubeconfig/exec-fails.yaml",
         "exec plugin ./plugins/fails.sh exited with status 3: install the fails plugin"},
        {"kubeconfig/exec-garbage.yaml", "its output is not an ExecCredential"},
        {"kubeconfig/exec.yaml", "exec plugin mld-no-such-auth-plugin: cannot run it: No such "
                                 "file or directory; install mld-no-such-auth-plugin"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *path = ts_fixture_path(cases[i].file);
        struct k8s_config c = {0};
        struct k8s_error err = {0};
        cr_assert_lt(k8s_config_from_kubeconfig(path, NULL, &c, &err), 0, "%s", cases[i].file);
        cr_assert(strstr(err.message, cases[i].why), "%s: %s", cases[i].file, err.message);
        cr_assert(strstr(err.message, path), "names the kubeconfig: %s", err.message);
        cr_assert_null(c.server, "outputs untouched on failure");
        free(path);
    }
}

Test(k8s_config, errors_name_the_file_and_the_problem)
{
    struct k8s_config c = {0};
    struct k8s_error err;
    char *exec = ts_fixture_path("kubeconfig/exec.yaml");
    cr_assert_lt(k8s_config_from_kubeconfig(exec, NULL, &c, &err), 0);
    cr_assert(strstr(err.message, "exec.yaml") && strstr(err.message, "exec"), "%s", err.message);
    char *missing = ts_fixture_path("kubeconfig/missing-context.yaml");
    cr_assert_lt(k8s_config_from_kubeconfig(missing, NULL, &c, &err), 0);
    cr_assert(strstr(err.message, "context \"nowhere\" not found"), "%s", err.message);
    cr_assert_lt(k8s_config_from_kubeconfig("/nonexistent/kubeconfig", NULL, &c, &err), 0);
    cr_assert(strstr(err.message, "/nonexistent/kubeconfig"), "%s", err.message);
    cr_assert_null(c.server, "outputs untouched on failure");
    free(exec);
    free(missing);
}

Test(k8s_config, in_cluster_service_account)
{
    char *dir = ts_fixture_path("serviceaccount");
    struct k8s_config c;
    struct k8s_error err;
    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    unsetenv("POD_NAMESPACE");
    cr_assert_eq(k8s_config_in_cluster(dir, &c, &err), 0, "%s", err.message);
    cr_assert_str_eq(c.server, "https://[fd00::1]:443");
    cr_assert(strstr(c.ca_pem, "sa-ca"));
    cr_assert(strstr(c.token_file, "serviceaccount/token"));
    cr_assert_str_eq(c.namespace, "gke-mldiagnostics");
    k8s_config_done(&c);
    unsetenv("KUBERNETES_SERVICE_HOST");
    cr_assert_eq(k8s_config_in_cluster(dir, &c, &err), -K8S_ENOTFOUND);
    free(dir);
}

Test(k8s_config, precedence_flag_then_env)
{
    char *path = ts_fixture_path("kubeconfig/full.yaml");
    struct k8s_config c;
    struct k8s_error err;
    unsetenv("KUBERNETES_SERVICE_HOST");
    setenv("KUBECONFIG", "/nonexistent/a:/nonexistent/b", 1);
    setenv("HOME", "/nonexistent-home", 1);
    cr_assert_eq(k8s_config_load(NULL, &c, &err), -K8S_ENOTFOUND);
    char list[1024];
    snprintf(list, sizeof(list), "/nonexistent/a:%s", path);
    setenv("KUBECONFIG", list, 1);
    cr_assert_eq(k8s_config_load("", &c, &err), 0, "%s", err.message);
    cr_assert_str_eq(c.server, "http://127.0.0.1:8001");
    k8s_config_done(&c);
    cr_assert_lt(k8s_config_load("/nonexistent/flag", &c, &err), 0, "the flag wins");
    free(path);
}
