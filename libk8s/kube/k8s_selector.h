/*
 * k8s_selector — a metav1.LabelSelector (matchLabels, matchExpressions
 * with In, NotIn, Exists, DoesNotExist) evaluated against a labels object,
 * as the API server evaluates a webhook's namespaceSelector and
 * objectSelector: every requirement must hold; an absent (NULL/null) or
 * empty selector matches everything; absent labels are no labels.
 *
 * Thread-safety: reentrant; the JSON is only read. Never allocates.
 */
#ifndef K8S_SELECTOR_H
#define K8S_SELECTOR_H

#include <jansson.h>
#include <stddef.h>

#include "k8s_err.h"

/* 1 when labels match selector; 0 when not, why naming the first
 * requirement that fails and the label's value (e.g. "label
 * diagon-webhook-exempt=true fails diagon-webhook-exempt NotIn [true]");
 * -K8S_EINVAL for a selector the API server would refuse (unknown
 * operator, values missing for In/NotIn or given for Exists), why saying
 * what is wrong. why may be NULL. */
int k8s_selector_match(const json_t *selector, const json_t *labels, char *why,
                       size_t why_cap) K8S_MUST_CHECK;

#endif
