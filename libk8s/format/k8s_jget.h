/*
 * k8s_jget — the getters every reader of API objects writes: a string
 * member one or two levels into a jansson object (obj.metadata.name), and
 * an object's controller owner reference.
 *
 * Thread-safety: reentrant. Ownership: what they return is borrowed from
 * the object, valid while it is. NULL-safe: a NULL, a missing member or
 * one of another type at any level gives NULL.
 */
#ifndef K8S_JGET_H
#define K8S_JGET_H

#include <jansson.h>

/* o.k as a string, or NULL. */
static inline const char *k8s_jstr(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* o.a.b as a string, or NULL. */
static inline const char *k8s_jstr2(const json_t *o, const char *a, const char *b)
{
    return k8s_jstr(json_object_get(o, a), b);
}

/* The entry of obj.metadata.ownerReferences with controller: true (the API
 * server allows at most one), or NULL. */
static inline const json_t *k8s_controller_ref(const json_t *obj)
{
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "ownerReferences"), i, o)
    {
        if (json_is_true(json_object_get(o, "controller")))
            return o;
    }
    return NULL;
}

#endif
