/* jsonx: small jansson helpers shared by every module. */
#ifndef FLEET_CORE_JSONX_H
#define FLEET_CORE_JSONX_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/err.h"

/* Parses text as one JSON object; 400 "api.bad_json" / "api.not_object" otherwise. */
json_t	*jsonx_parse_object(const char *text, size_t len, struct err *e);
/* Rejects members of obj not listed in allowed (NULL-terminated): 400 "api.unknown_field"
 * with the pointer prefix + "/" + name. */
bool	 jsonx_only(json_t *obj, const char *const *allowed, const char *prefix, struct err *e);
/* Typed getters: absent -> default (or error when required); wrong type -> 400 with pointer. */
bool	 jsonx_str(json_t *obj, const char *key, const char *prefix, bool required,
	    const char **out, struct err *e);
bool	 jsonx_int(json_t *obj, const char *key, const char *prefix, bool required,
	    long long *out, struct err *e);
bool	 jsonx_num(json_t *obj, const char *key, const char *prefix, bool required,
	    double *out, struct err *e);
bool	 jsonx_bool(json_t *obj, const char *key, const char *prefix, bool required,
	    bool *out, struct err *e);
/* An object member: *out borrowed from obj, NULL when absent or null (and not required). */
bool	 jsonx_obj(json_t *obj, const char *key, const char *prefix, bool required,
	    json_t **out, struct err *e);
/* Member key of obj into *out (NULL when absent or null: 400 api.missing_field when
 * required) and its JSON pointer prefix/key into ptr, for checks the getters above lack. */
bool	 jsonx_member(json_t *obj, const char *key, const char *prefix, bool required,
	    json_t **out, char *ptr, size_t ptrlen, struct err *e);
/* Valid UTF-8, no NUL bytes. */
/* A name of an object (environment, cloud, cluster, queue): 2..max characters, a lowercase
 * letter, then lowercase letters, digits and '-'. */
bool	 jsonx_name_ok(const char *s, size_t max);
/* The string at obj.key, or at obj.key.key2 when key2 is not NULL; NULL when absent or not
 * a string (borrowed from obj). */
const char *jsonx_at(json_t *obj, const char *key, const char *key2);
/* A Kubernetes object's metadata member key (obj.metadata.key), borrowed from obj; NULL
 * when obj, its metadata or the member is absent.  _str: the same when it is a string. */
json_t	*jsonx_meta(const json_t *obj, const char *key);
const char *jsonx_meta_str(const json_t *obj, const char *key);
/* The first element of the array arr whose string member key is value (absent or not a
 * string counts as ""), borrowed; NULL when none or arr is no array. */
json_t	*jsonx_find(json_t *arr, const char *key, const char *value);
bool	 jsonx_utf8_valid(const char *s, size_t len);

#endif
