/* kinds_json — print the kind table (libk8s/ml/k8s_kinds.h) as JSON, for the
 * tests that check what is written outside C against it (the charts' RBAC,
 * the CRD's workloadRef enum: tests/integration/test_charts.py). */
#include <stdio.h>
#include <stdlib.h>

#include "k8s_kinds.h"

int main(void)
{
    json_t *t = k8s_kinds_json();
    char *s = t ? json_dumps(t, JSON_INDENT(2)) : NULL;
    if (!s) {
        fputs("kinds_json: out of memory\n", stderr);
        return 1;
    }
    puts(s);
    free(s);
    json_decref(t);
    return 0;
}
