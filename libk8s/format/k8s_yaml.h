/*
 * k8s_yaml — YAML manifests to jansson values and back (libyaml underneath),
 * resolving scalars the way kubectl users expect (sigs.k8s.io/yaml).
 *
 * Loading (plain, untagged scalars; quoted and block scalars are always
 * strings):
 *   ""  ~  null  Null  NULL                        -> null
 *   true True TRUE false False FALSE               -> boolean
 *   [-+]?[0-9]+, 0x.. (hex), 0o.. and 0[0-7]+ (octal, as kubectl reads
 *   "defaultMode: 0644")                           -> integer; a decimal
 *                                                     outside int64 -> real
 *   [-+]?(.[0-9]+|[0-9]+(.[0-9]*)?)([eE][-+]?[0-9]+)? -> real
 *   .inf -.inf .nan (any case variant)             -> rejected: JSON has no
 *                                                     such numbers
 *   anything else                                  -> string
 * Unlike YAML 1.1 (which sigs.k8s.io/yaml follows), yes/no/on/off, 1_000,
 * 12:30 and timestamps stay strings. The tags !!str !!int !!float !!bool
 * !!null are honoured (also on quoted scalars; a value the tag cannot parse
 * is an error), "!" forces a string, other tags are ignored. Aliases copy
 * the anchored value; "<<" merge keys are supported (explicit keys win,
 * earlier merged maps win over later ones); a duplicate key: the last one
 * wins. Mapping keys must be scalars and are kept as their source text
 * ("1", "true"); an alias used as a key must name a string. Documents that
 * are empty or null are skipped. Limits: nesting depth 1000, 1,000,000
 * nodes per call counting alias expansions; the input must be UTF-8.
 *
 * Dumping writes block-style YAML like `kubectl get -o yaml` (2-space
 * indentation, sequences not indented under their key, object keys in
 * insertion order, no leading "---"). Strings that a YAML 1.1 or 1.2 reader
 * would take for another type ("true", "yes", "123", "1.5", "~", "",
 * "2024-01-01") are double-quoted, as kubectl does; libyaml single-quotes
 * strings that plain style cannot carry ("- x", "a: b", " x") and
 * double-quotes those needing escapes (control characters); multi-line
 * strings use literal blocks ("|") unless they end in an empty line. Reals
 * always read back as reals ("1.0", "1e+20").
 *
 * Numbers go through strtod/printf: LC_NUMERIC must be "C" (the default).
 *
 * Ownership: k8s_yaml_load_all returns a new array (the caller's
 * reference); k8s_yaml_dump borrows its document and appends to a buffer
 * the caller owns. On failure nothing is returned and nothing is leaked.
 *
 * Thread-safety: reentrant; a json_t must not be mutated concurrently.
 */
#ifndef K8S_YAML_H
#define K8S_YAML_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "k8s_buf.h"
#include "k8s_err.h"

#define K8S_YAML_MAX_DEPTH 1000
#define K8S_YAML_MAX_NODES 1000000

/* Parse every document of buf (len bytes, need not be NUL-terminated). On
 * success *ret_docs is a new array holding one value per non-empty
 * document. On failure *ret_docs is untouched and the error is -K8S_EPARSE
 * (syntax, invalid UTF-8, limits, unknown anchors, .inf/.nan) with
 * reterr->message "yaml: line L column C: <problem>", or -K8S_ENOMEM. */
int k8s_yaml_load_all(const char *buf, size_t len, json_t **ret_docs,
                      struct k8s_error *reterr) K8S_MUST_CHECK;

/* Append doc as one YAML document, ending in a newline, to out. Errors:
 * -K8S_ETOOBIG past out's cap, -K8S_ENOMEM, -K8S_EINVAL for a document
 * nested deeper than K8S_YAML_MAX_DEPTH (or a string libyaml refuses). On
 * failure out keeps its contents, unless the final append runs out of
 * memory (then k8s_buf rules reset it to empty). */
int k8s_yaml_dump(const json_t *doc, struct k8s_buf *out, struct k8s_error *reterr) K8S_MUST_CHECK;

/* true when the first non-whitespace byte is '{' or '[' (JSON input, to be
 * written back as JSON). */
bool k8s_yaml_looks_like_json(const char *buf, size_t len);

#endif
