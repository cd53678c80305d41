/*
 * k8s_names — the label and annotation names both programs read or write
 * (DESIGN §3.3, §3.5, §4.4), defined once.
 *
 * Header only: string constants, nothing to free, nothing that fails.
 */
#ifndef K8S_NAMES_H
#define K8S_NAMES_H

/* The opt-in / opt-out label (pods, workloads, namespaces) and annotation
 * (pods). */
#define K8S_LABEL_MANAGED "managed-mldiagnostics-gke"
/* Namespaces the chart's namespaceSelector excludes. */
#define K8S_LABEL_EXEMPT "diagon-webhook-exempt"

/* What the webhook writes on a pod it injects. */
#define K8S_ANN_IDENTIFIER "diagon.gke.io/identifier"
#define K8S_ANN_METADATA   "diagon.gke.io/metadata"
#define K8S_ANN_INJECTION  "diagon.gke.io/injection"

/* What users may set on pods, workloads or namespaces. */
#define K8S_ANN_CONTAINERS   "diagon.gke.io/inject-containers"
#define K8S_ANN_SERVICE_NAME "diagon.gke.io/otel-service-name"
#define K8S_ANN_ATTRS        "diagon.gke.io/otel-resource-attributes"
#define K8S_ANN_ATTRS_MERGE  "diagon.gke.io/otel-resource-attributes-merge"

#endif
