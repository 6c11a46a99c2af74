/* terraform-provider-fleet: shared declarations.  Values are jansson trees: null is
 * json_null(), an unknown value is the one sentinel tf_unknown(); schemas are static
 * attribute tables from which the protocol schema, the msgpack type and the API mapping
 * all derive. */
#ifndef FLEET_TF_H
#define FLEET_TF_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/arena.h"
#include "tfplugin6.pb-c.h"

enum tf_ty { TY_STR = 1, TY_NUM, TY_BOOL, TY_LIST, TY_MAP, TY_OBJ };

enum {
	F_REQ	= 1 << 0,	/* required in configuration */
	F_OPT	= 1 << 1,	/* optional */
	F_COMP	= 1 << 2,	/* computed (with F_OPT: defaulted by fleetd) */
	F_SENS	= 1 << 3,	/* sensitive */
	F_WO	= 1 << 4,	/* write-only: never in plan or state (Terraform 1.11) */
	F_RNEW	= 1 << 5,	/* a change replaces the object (immutable in the API: 409) */
	F_JSON	= 1 << 6,	/* a string holding a JSON document */
	F_VOL	= 1 << 7,	/* computed value that changes with every update */
	F_LOCAL	= 1 << 8,	/* provider-side only: never sent to nor read from fleetd */
	F_CLEAR	= 1 << 9,	/* null is sent as null (the API removes it), not left out */
};

/* A validator: true when v (known, not null) is acceptable; else fills msg. */
typedef bool (*tf_check_fn)(json_t *v, char *msg, size_t n);

struct tf_attr {
	const char		*name;
	const char		*api;		/* key (or dotted path) in fleetd's JSON; NULL = name */
	enum tf_ty		 ty;
	enum tf_ty		 elem;		/* element type of a list or map */
	const struct tf_attr	*nested;	/* attributes of TY_OBJ or of a list/map of TY_OBJ */
	unsigned		 flags;
	tf_check_fn		 check;
	const char		*desc;
};

struct tf_diags;
struct tf_res;

/* What each resource does beyond the generic mapping.  All return false with a
 * diagnostic added.  state is the object of the top-level attributes. */
struct tf_ops {
	bool	(*create)(const struct tf_res *r, json_t *planned, json_t *config, json_t **api,
		    struct tf_diags *d);
	bool	(*read)(const struct tf_res *r, json_t *state, json_t **api, struct tf_diags *d);
	bool	(*update)(const struct tf_res *r, json_t *prior, json_t *planned, json_t *config,
		    json_t **api, struct tf_diags *d);
	bool	(*remove)(const struct tf_res *r, json_t *state, struct tf_diags *d);
	/* cross-attribute validation of a configuration */
	void	(*validate)(const struct tf_res *r, json_t *config, struct tf_diags *d);
};

struct tf_res {
	const char		*type;		/* fleet_queue */
	const struct tf_attr	*attrs;		/* NULL-name terminated */
	const char		*coll;		/* /v1/queues */
	const char		*key;		/* attribute naming the object in paths: id or name */
	const struct tf_ops	*ops;		/* NULL members: generic REST */
	const char		*desc;
};

/* ---- values (value.c) */
json_t	*tf_unknown(void);			/* borrowed sentinel */
bool	 tf_is_unknown(const json_t *v);
bool	 tf_wholly_known(const json_t *v);
/* msgpack (or JSON when is_json) bytes -> new value; NULL on malformed input. */
json_t	*tf_decode(const uint8_t *buf, size_t len, bool is_json);
/* Value of the attribute list as a typed msgpack object (object type), malloc'd. */
bool	 tf_encode_obj(const struct tf_attr *attrs, json_t *obj, uint8_t **out, size_t *len);
/* The cty type JSON of one attribute, malloc'd. */
char	*tf_type_json(const struct tf_attr *a);
/* Deep equality, unknown equals only unknown, numbers by value. */
json_t	*tf_copy(json_t *v);	/* deep copy that keeps the unknown sentinel */
bool	 tf_equal(const json_t *a, const json_t *b);
json_t	*tf_get(json_t *obj, const char *name);	/* borrowed; json_null() when absent */
/* fleetd JSON -> attribute value / back. */
json_t	*tf_from_api(const struct tf_attr *a, json_t *api);
bool	 tf_api_has(const struct tf_attr *a, json_t *api);	/* member present (maybe null) */
json_t	*tf_to_api(const struct tf_attr *a, json_t *v);
/* A new state object: every attribute present, from the API object. */
json_t	*tf_state_from_api(const struct tf_attr *attrs, json_t *api);
/* A new fleetd body from the input attributes of state. */
json_t	*tf_body(const struct tf_attr *attrs, json_t *state);
const struct tf_attr *tf_attr_find(const struct tf_attr *attrs, const char *name);

/* ---- diagnostics (rpc.c) */
struct tf_diags {
	struct arena		*arena;
	Tfplugin6__Diagnostic	**v;
	size_t			 n, cap;
	bool			 error;
};
void	tf_diag(struct tf_diags *d, bool error, const char *attr, const char *summary,
	    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* ---- schema (schema.c) */
extern const struct tf_attr	 tf_provider_attrs[];
extern const struct tf_res	 tf_resources[];
extern const struct tf_res	 tf_data_sources[];
const struct tf_res *tf_res_find(const struct tf_res *tab, const char *type);
Tfplugin6__Schema *tf_schema_build(struct arena *a, const struct tf_attr *attrs,
	    const char *desc, bool data_source);
/* Attribute checks against the table (required, unknown-safe validators); adds diags. */
void	tf_validate_attrs(const struct tf_attr *attrs, json_t *config, const char *prefix,
	    struct tf_diags *d);

/* ---- fleetd client (client.c) */
struct tf_conf {
	char	*url;
	char	*token;
	char	*ca_pem;
	long	 timeout_ms;
	int	 retries;
	int	 iam_timeout_s;
	bool	 configured;
};
extern struct tf_conf tf_conf;
/* Whether url may carry the token: https://, or http:// to a loopback host (localhost,
 * 127.0.0.0/8, ::1) only. */
bool	tf_url_ok(const char *url);
/* Set by StopProvider (Ctrl-C in Terraform): waits in progress give up at their next turn. */
extern _Atomic int tf_stopping;
/* One API call.  *out is the parsed body (may be NULL); *status the HTTP status.
 * False (with a diagnostic) on transport failure or when the status is not in
 * ok1/ok2 (0 = none); a 404 with accept_404 is success with *status 404. */
bool	tf_api(const char *method, const char *path, json_t *body, int ok1, int ok2,
	    bool accept_404, json_t **out, int *status, struct tf_diags *d);
/* The same with If-Match from version (a state's version number; NULL or null: none). */
bool	tf_api_ex(const char *method, const char *path, json_t *body, json_t *version, int ok1,
	    int ok2, bool accept_404, json_t **out, int *status, struct tf_diags *d);
/* Adds the problem+json answer as diagnostics (one per error entry). */
void	tf_api_problem(json_t *problem, int status, const char *what, struct tf_diags *d);
const char *tf_str(json_t *obj, const char *name);	/* string member or NULL */

/* ---- resources (resources.c) */
bool	tf_res_create(const struct tf_res *r, json_t *planned, json_t *config, json_t **api,
	    struct tf_diags *d);
bool	tf_res_read(const struct tf_res *r, json_t *state, json_t **api, struct tf_diags *d);
bool	tf_res_update(const struct tf_res *r, json_t *prior, json_t *planned, json_t *config,
	    json_t **api, struct tf_diags *d);
bool	tf_res_remove(const struct tf_res *r, json_t *state, struct tf_diags *d);
bool	tf_data_read(const struct tf_res *r, json_t *config, json_t **state, struct tf_diags *d);

/* ---- RPC handlers (rpc.c): request bytes in, response bytes out (malloc'd). */
bool	tf_rpc(const char *method, const uint8_t *in, size_t inlen, uint8_t **out,
	    size_t *outlen);

/* regions.c: names from regions/catalog_regions.def (the data fleetd's catalog is built
 * from).  The lists are new arrays; tf_regions_list is NULL for an unknown provider. */
bool	 tf_provider_valid(const char *provider);
json_t	*tf_providers_list(void);
bool	 tf_region_valid(const char *provider, const char *region);
json_t	*tf_regions_list(const char *provider);

#endif
