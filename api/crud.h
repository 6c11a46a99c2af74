/* crud: the one read-and-write path of the resource handlers — visibility (a row outside
 * the caller's environments is 404), If-Match, the audit row, the reply — for modules that
 * keep their rows as JSON.  A handler fills one struct crud and calls these. */
#ifndef FLEET_API_CRUD_H
#define FLEET_API_CRUD_H

#include <stdbool.h>

#include <jansson.h>

#include "api/server.h"
#include "core/db.h"

struct crud {
	const char	*type;		/* audit resource type and action prefix: "queue" */
	const char	*code;		/* 404 code: "queue.not_found" */
	const char	*noun;		/* in the 404 message: "queue" */
	const char	*collection;	/* Location of a created row: collection/<key>, or NULL */
	const char	*key;		/* route parameter and row member naming a row; NULL:
					 * "id" ("name" for environments) */
	bool		 scoped;	/* rows carry an environment: the caller must see it */
	const char	*env;		/* with scoped, the row member holding it; NULL:
					 * "environment" ("name" for environments) */
	const char	*envs;		/* a row member listing environments, all of which the
					 * caller must see (tokens), or NULL */
	const char	*team;		/* a row member naming the team owning the row (NULL or
					 * null: environment-wide), which a caller holding its
					 * role in a team must hold (else 404), or NULL */
	const char	*parent;	/* when the route has this parameter, the row's member
					 * of the same name must equal it (else 404), or NULL */
	const char	*del_verb;	/* audit action of DELETE: "<type>.<del_verb>"; NULL:
					 * "delete" ("revoke" for tokens) */
	/* the module's operations; a row is named by its key member */
	bool		(*get)(struct db *c, const char *id, bool lock, json_t **out,
			    struct err *e);
	bool		(*create)(struct db *c, json_t *body, json_t **out, struct err *e);
	bool		(*replace)(struct db *c, const char *id, json_t *body, json_t **out,
			    struct err *e);
	bool		(*del)(struct db *c, const char *id, struct err *e);
};

/* The row named id read on c (rq->db, or a transaction of an R_NOTX route; FOR UPDATE when lock)
 * when the caller may see it; else 404 k->code, and *out stays NULL.  On success the caller
 * owns *out. */
bool	crud_get(struct request *rq, const struct crud *k, struct db *c, const char *id,
	    bool lock, json_t **out, struct err *e);
/* GET {id}: crud_get and a 200 with the row and its ETag. */
bool	crud_read(struct request *rq, const struct crud *k, struct err *e);
/* POST: the body's environment must be visible (404 env.not_found at /environment), then
 * create, audit "<type>.<verb>" (verb NULL: "create") and answer 201 with Location. */
bool	crud_create(struct request *rq, const struct crud *k, const char *verb, struct err *e);
/* PUT {id}: crud_get (locked), If-Match, replace; audit "<type>.update" when the version
 * moved (an identical PUT writes nothing), and answer 200. */
bool	crud_replace(struct request *rq, const struct crud *k, struct err *e);
/* An action on row id that is not a PUT (cancel, cordon): crud_get (locked), act(c, id,
 * arg, &row), audit "<type>.<verb>" when the version moved, answer 200 with the row. */
typedef bool (*crud_act_fn)(struct db *c, const char *id, void *arg, json_t **out,
	    struct err *e);
bool	crud_action(struct request *rq, const struct crud *k, const char *id, const char *verb,
	    crud_act_fn act, void *arg, struct err *e);
/* DELETE {id}: crud_get (locked), If-Match, delete, audit "<type>.delete", 204. */
bool	crud_delete(struct request *rq, const struct crud *k, struct err *e);

#endif
