/*
 * wh_podspec — the few fields of a pod spec the mutation reads, as plain
 * structs: each container's and init container's name, restartPolicy, env
 * (name, value, valueFrom, and each entry's JSON text, so that a patch can
 * write the list whole) and volumeMounts (name, mountPath), and the
 * volumes' names. Nothing else of the spec is kept.
 *
 * Two readers fill the same struct, so the mutation has one input:
 *   - wh_podspec_pull: a k8s_jsonload pull reader, so the spec is read
 *     while the review is validated, in the same pass (wh_review calls it
 *     as it reads the object); no DOM, no hash table. wh_podspec_read does the
 *     same for a spec's text alone.
 *   - wh_podspec_from_json: from a jansson tree (the offline `inject`
 *     command, tests).
 * Both follow jansson's reading of a document: of duplicate keys the last
 * counts; a member of the wrong type reads as absent (a string field as
 * NULL) or, for a list, as WH_SHAPE_OTHER.
 *
 * Thread-safety: reentrant. Ownership: the struct owns its arrays and,
 * from wh_podspec_read and wh_podspec_pull, the decoded strings, all
 * taken from its arena (the request's, passed in; NULL: malloc'd, as
 * wh_podspec_from_json always is, whose strings are borrowed from the
 * tree). An env entry's raw text is a view into the document from the
 * pull readers (so the document must outlive the struct) and a copy
 * (jansson's compact dump) from a tree. wh_podspec_done releases them (safe on a zeroed struct; a
 * no-op for an arena's memory, which returns at the arena's reset, so the arena must outlive the
 * struct) and keeps the struct's arena. Failure: -K8S_ENOMEM, or -K8S_EPARSE when the text is not
 * JSON; the struct is left empty (wh_podspec_pull: to be freed).
 */
#ifndef WH_PODSPEC_H
#define WH_PODSPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "k8s_err.h"
#include "k8s_jsonload.h"

struct k8s_arena;

/* How a member holds its list (or, for the spec, its object). */
enum wh_shape {
    WH_SHAPE_ABSENT,
    WH_SHAPE_NULL,
    WH_SHAPE_LIST, /* an array (the spec: an object) */
    WH_SHAPE_OTHER /* anything else */
};

/* The shape of a member's value v in a tree (NULL: absent); object: an
 * object is LIST, else an array is. */
enum wh_shape wh_shape_of(const json_t *v, bool object);

struct wh_envvar {
    const char *name;  /* NULL unless a string */
    size_t len;        /* of name */
    const char *value; /* NULL unless a string */
    size_t vlen;       /* of value */
    bool value_from;   /* has a valueFrom member */
    const char *raw;   /* the entry's JSON text, as given (not NUL-terminated) */
    size_t raw_len;
};

struct wh_mount {
    const char *name, *mount_path; /* NULL unless strings */
};

struct wh_container {
    bool is_object;             /* false: the element is not an object (all else empty) */
    const char *name;           /* NULL unless a string */
    const char *restart_policy; /* NULL unless a string */
    enum wh_shape env_shape;
    struct wh_envvar *env;
    size_t n_env;
    char *raw_pool; /* from a tree: the entries' text (the pull reader: none) */
    enum wh_shape mounts_shape;
    struct wh_mount *mounts;
    size_t n_mounts;
};

/* The container lists, in this order (their member names in the table of
 * wh_podspec.c). */
enum wh_podspec_list { WH_CONTAINERS, WH_INIT_CONTAINERS, WH_NLISTS };

struct wh_podspec {
    enum wh_shape shape; /* of spec: LIST = an object */
    struct {
        enum wh_shape shape;
        struct wh_container *c;
        size_t n;
    } list[WH_NLISTS];
    enum wh_shape volumes_shape;
    const char **volumes; /* each volume's name, NULL unless a string */
    size_t n_volumes;
    char *pool;              /* wh_podspec_read: the decoded strings */
    struct k8s_arena *arena; /* where the arrays and strings come from (NULL: malloc) */
};

/* The member name of a container list ("containers", "initContainers"). */
const char *wh_podspec_list_name(enum wh_podspec_list l);

/* The pull reader (k8s_json_pull_fn) for a spec member, p at its value;
 * arg is the struct wh_podspec, zeroed but for its arena before the first
 * call (a later call, for a duplicate member, replaces what it holds). */
int wh_podspec_pull(struct k8s_jpull *p, void *arg);
/* Read spec text (not NUL-terminated; NULL: the spec is absent) with
 * arena's memory (NULL: malloc). */
int wh_podspec_read(const char *text, size_t len, struct k8s_arena *arena,
                    struct wh_podspec *ret) K8S_MUST_CHECK;
/* Read a spec tree (NULL: absent). */
int wh_podspec_from_json(const json_t *spec, struct wh_podspec *ret) K8S_MUST_CHECK;
/* One container of a tree, into *ret (strings borrowed from c, arrays
 * malloc'd); free with wh_container_done, for such containers only. */
int wh_container_from_json(const json_t *c, struct wh_container *ret) K8S_MUST_CHECK;
void wh_container_done(struct wh_container *c);
void wh_podspec_done(struct wh_podspec *s);

#endif
