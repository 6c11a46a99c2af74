/* rpc: the tfplugin6.Provider calls.  Each unpacks its request, works on jansson values
 * and packs its response; anything allocated for the response lives in one arena. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tf.h"

/* ------------------------------------------------------------------ diagnostics */

static Tfplugin6__AttributePath *
path_build(struct arena *a, const char *dotted)
{
	Tfplugin6__AttributePath *p = arena_alloc(a, sizeof *p);
	char *copy = arena_strdup(a, dotted), *save = NULL;
	size_t n = 1;

	tfplugin6__attribute_path__init(p);
	for (const char *c = dotted; *c; c++)
		n += *c == '.';
	p->steps = arena_alloc(a, n * sizeof *p->steps);
	for (char *t = strtok_r(copy, ".", &save); t; t = strtok_r(NULL, ".", &save)) {
		Tfplugin6__AttributePath__Step *s = arena_alloc(a, sizeof *s);

		tfplugin6__attribute_path__step__init(s);
		s->selector_case = TFPLUGIN6__ATTRIBUTE_PATH__STEP__SELECTOR_ATTRIBUTE_NAME;
		s->attribute_name = t;
		p->steps[p->n_steps++] = s;
	}
	return p;
}

void
tf_diag(struct tf_diags *d, bool error, const char *attr, const char *summary,
    const char *fmt, ...)
{
	Tfplugin6__Diagnostic *g = arena_alloc(d->arena, sizeof *g);
	char detail[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof detail, fmt, ap);
	va_end(ap);
	tfplugin6__diagnostic__init(g);
	g->severity = error ? TFPLUGIN6__DIAGNOSTIC__SEVERITY__ERROR :
	    TFPLUGIN6__DIAGNOSTIC__SEVERITY__WARNING;
	g->summary = arena_strdup(d->arena, summary);
	g->detail = arena_strdup(d->arena, detail);
	if (attr)
		g->attribute = path_build(d->arena, attr);
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 8;
		Tfplugin6__Diagnostic **v = arena_alloc(d->arena, cap * sizeof *v);
		if (d->n)
			memcpy(v, d->v, d->n * sizeof *v);
		d->v = v;
		d->cap = cap;
	}
	d->v[d->n++] = g;
	d->error |= error;
}

/* ------------------------------------------------------------------ values */

static json_t *
dv_decode(Tfplugin6__DynamicValue *dv)
{
	if (!dv)
		return json_null();
	if (dv->msgpack.len)
		return tf_decode(dv->msgpack.data, dv->msgpack.len, false);
	if (dv->json.len)
		return tf_decode(dv->json.data, dv->json.len, true);
	return json_null();
}

static Tfplugin6__DynamicValue *
dv_encode(struct arena *a, const struct tf_attr *attrs, json_t *v)
{
	Tfplugin6__DynamicValue *dv = arena_alloc(a, sizeof *dv);
	uint8_t *buf;
	size_t len;

	tfplugin6__dynamic_value__init(dv);
	tf_encode_obj(attrs, v, &buf, &len);
	dv->msgpack.data = arena_alloc(a, len ? len : 1);
	memcpy(dv->msgpack.data, buf, len);
	dv->msgpack.len = len;
	free(buf);
	return dv;
}

/* Unknowns left anywhere in a new state become null (Terraform refuses unknowns). */
static void
known_or_null(json_t *obj)
{
	const char *k;
	json_t *x;
	size_t i;

	if (json_is_object(obj) && !tf_is_unknown(obj)) {
		json_object_foreach(obj, k, x) {
			if (tf_is_unknown(x))
				json_object_set_new(obj, k, json_null());
			else
				known_or_null(x);
		}
	} else if (json_is_array(obj)) {
		json_array_foreach(obj, i, x) {
			if (tf_is_unknown(x))
				json_array_set_new(obj, i, json_null());
			else
				known_or_null(x);
		}
	}
}

/* The state after an API answer: fleetd's values, the provider's own attributes from
 * base (planned or prior), members fleetd does not return (a token's secret) kept. */
static json_t *
state_merge(const struct tf_res *r, json_t *api, json_t *base)
{
	json_t *st = tf_state_from_api(r->attrs, api);

	for (const struct tf_attr *a = r->attrs; a->name; a++) {
		if (a->flags & F_WO)
			json_object_set_new(st, a->name, json_null());
		else if ((a->flags & F_LOCAL) || !tf_api_has(a, api))
			json_object_set(st, a->name, tf_get(base, a->name));
	}
	known_or_null(st);
	return st;
}

/* ------------------------------------------------------------------ handlers */

/* protobuf-c generates pack/unpack for top-level messages only: the generic calls. */
#define UNPACK(type, fn)							\
	type *req = (type *)protobuf_c_message_unpack(&fn##__descriptor, NULL, inlen, in); \
	if (!req)								\
		return false

#define PACK(fn, resp) do {							\
	*outlen = protobuf_c_message_get_packed_size((const ProtobufCMessage *)(resp)); \
	*out = malloc(*outlen ? *outlen : 1);					\
	protobuf_c_message_pack((const ProtobufCMessage *)(resp), *out);	\
} while (0)

#define FREE_REQ() protobuf_c_message_free_unpacked((ProtobufCMessage *)req, NULL)

static bool
h_schema(struct arena *a, const uint8_t *in, size_t inlen, uint8_t **out, size_t *outlen)
{
	Tfplugin6__GetProviderSchema__Response resp = TFPLUGIN6__GET_PROVIDER_SCHEMA__RESPONSE__INIT;
	Tfplugin6__ServerCapabilities caps = TFPLUGIN6__SERVER_CAPABILITIES__INIT;
	size_t nr = 0, nd = 0;

	(void)in;
	(void)inlen;
	for (const struct tf_res *r = tf_resources; r->type; r++)
		nr++;
	for (const struct tf_res *r = tf_data_sources; r->type; r++)
		nd++;
	resp.provider = tf_schema_build(a, tf_provider_attrs, "fleetd, the Ray fleet control plane.",
	    true);
	resp.resource_schemas = arena_alloc(a, nr * sizeof *resp.resource_schemas);
	for (size_t i = 0; i < nr; i++) {
		Tfplugin6__GetProviderSchema__Response__ResourceSchemasEntry *e =
		    arena_alloc(a, sizeof *e);
		tfplugin6__get_provider_schema__response__resource_schemas_entry__init(e);
		e->key = (char *)tf_resources[i].type;
		e->value = tf_schema_build(a, tf_resources[i].attrs, tf_resources[i].desc, false);
		resp.resource_schemas[resp.n_resource_schemas++] = e;
	}
	resp.data_source_schemas = arena_alloc(a, nd * sizeof *resp.data_source_schemas);
	for (size_t i = 0; i < nd; i++) {
		Tfplugin6__GetProviderSchema__Response__DataSourceSchemasEntry *e =
		    arena_alloc(a, sizeof *e);
		tfplugin6__get_provider_schema__response__data_source_schemas_entry__init(e);
		e->key = (char *)tf_data_sources[i].type;
		e->value = tf_schema_build(a, tf_data_sources[i].attrs, tf_data_sources[i].desc, true);
		resp.data_source_schemas[resp.n_data_source_schemas++] = e;
	}
	resp.server_capabilities = &caps;
	PACK(tfplugin6__get_provider_schema__response, &resp);
	return true;
}

static bool
h_validate_provider(struct arena *a, const uint8_t *in, size_t inlen, uint8_t **out,
    size_t *outlen)
{
	UNPACK(Tfplugin6__ValidateProviderConfig__Request, tfplugin6__validate_provider_config__request);
	Tfplugin6__ValidateProviderConfig__Response resp =
	    TFPLUGIN6__VALIDATE_PROVIDER_CONFIG__RESPONSE__INIT;
	struct tf_diags d = {.arena = a};
	json_t *cfg = dv_decode(req->config);

	tf_validate_attrs(tf_provider_attrs, cfg, "", &d);
	resp.diagnostics = d.v;
	resp.n_diagnostics = d.n;
	PACK(tfplugin6__validate_provider_config__response, &resp);
	json_decref(cfg);
	FREE_REQ();
	return true;
}

static char *
conf_str(json_t *cfg, const char *name, const char *env)
{
	const char *v = json_string_value(tf_get(cfg, name));

	if (!v && env)
		v = getenv(env);
	return v && *v ? strdup(v) : NULL;
}

static bool
h_configure(struct arena *a, const uint8_t *in, size_t inlen, uint8_t **out, size_t *outlen)
{
	UNPACK(Tfplugin6__ConfigureProvider__Request, tfplugin6__configure_provider__request);
	Tfplugin6__ConfigureProvider__Response resp = TFPLUGIN6__CONFIGURE_PROVIDER__RESPONSE__INIT;
	struct tf_diags d = {.arena = a};
	json_t *cfg = dv_decode(req->config), *v;

	free(tf_conf.url);
	free(tf_conf.token);
	free(tf_conf.ca_pem);
	tf_conf.url = conf_str(cfg, "url", "FLEET_URL");
	tf_conf.token = conf_str(cfg, "token", "FLEET_TOKEN");
	tf_conf.ca_pem = conf_str(cfg, "ca_cert", NULL);
	if (json_is_number(v = tf_get(cfg, "request_timeout")))
		tf_conf.timeout_ms = (long)(json_number_value(v) * 1000);
	if (json_is_number(v = tf_get(cfg, "max_retries")))
		tf_conf.retries = (int)json_number_value(v);
	if (json_is_number(v = tf_get(cfg, "iam_verification_timeout")))
		tf_conf.iam_timeout_s = (int)json_number_value(v);
	if (!tf_conf.url)
		tf_diag(&d, true, "url", "Missing fleetd URL",
		    "Set the provider's \"url\" attribute or the FLEET_URL environment variable.");
	else if (!tf_url_ok(tf_conf.url))
		tf_diag(&d, true, "url", "Invalid attribute value",
		    "Attribute \"url\" must start with https:// (or http:// on loopback: localhost,"
		    " 127.0.0.0/8, [::1]).");
	else {
		size_t n = strlen(tf_conf.url);
		while (n > 0 && tf_conf.url[n - 1] == '/')
			tf_conf.url[--n] = 0;
	}
	if (!tf_conf.token)
		tf_diag(&d, true, "token", "Missing fleetd token",
		    "Set the provider's \"token\" attribute or the FLEET_TOKEN environment variable.");
	tf_conf.configured = !d.error;
	resp.diagnostics = d.v;
	resp.n_diagnostics = d.n;
	PACK(tfplugin6__configure_provider__response, &resp);
	json_decref(cfg);
	FREE_REQ();
	return true;
}

static bool
h_validate_resource(struct arena *a, const uint8_t *in, size_t inlen, uint8_t **out,
    size_t *outlen)
{
	UNPACK(Tfplugin6__ValidateResourceConfig__Request, tfplugin6__validate_resource_config__request);
	Tfplugin6__ValidateResourceConfig__Response resp =
	    TFPLUGIN6__VALIDATE_RESOURCE_CONFIG__RESPONSE__INIT;
	struct tf_diags d = {.arena = a};
	const struct tf_res *r = tf_res_find(tf_resources, req->type_name);
	json_t *cfg = dv_decode(req->config);

	if (!r)
		tf_diag(&d, true, NULL, "Unknown resource type", "%s", req->type_name);
	else {
		tf_validate_attrs(r->attrs, cfg, "", &d);
		if (r->ops && r->ops->validate)
			r->ops->validate(r, cfg, &d);
		if (!req->client_capabilities ||
		    !req->client_capabilities->write_only_attributes_allowed)
			for (const struct tf_attr *t = r->attrs; t->name; t++)
				if (t->flags & F_WO)
					tf_diag(&d, true, t->name, "Write-only attributes unsupported",
					    "Attribute \"%s\" is write-only and needs Terraform 1.11 "
					    "or later.", t->name);
	}
	resp.diagnostics = d.v;
	resp.n_diagnostics = d.n;
	PACK(tfplugin6__validate_resource_config__response, &resp);
	json_decref(cfg);
	FREE_REQ();
	return true;
}

static bool
h_validate_data(struct arena *a, const uint8_t *in, size_t inlen, uint8_t **out,
    size_t *outlen)
{
	UNPACK(Tfplugin6__ValidateDataResourceConfig__Request,
	    tfplugin6__validate_data_resource_config__request);
	Tfplugin6__ValidateDataResourceConfig__Response resp =
	    TFPLUGIN6__VALIDATE_DATA_RESOURCE_CONFIG__RESPONSE__INIT;
	struct tf_diags d = {.arena = a};
	const struct tf_res *r = tf_res_find(tf_data_sources, req->type_name);
	json_t *cfg = dv_decode(req->config);

	if (!r)
		tf_diag(&d, true, NULL, "Unknown data source", "%s", req->type_name);
	else
		tf_validate_attrs(r->attrs, cfg, "", &d);
	resp.diagnostics = d.v;
	resp.n_diagnostics = d.n;
	PACK(tfplugin6__validate_data_resource_config__response, &resp);
	json_decref(cfg);
	FREE_REQ();
	return true;
}

static bool
h_upgrade(struct arena *a, const uint8_t *in, size_t inlen, uint8_t **out, size_t *outlen)
{
	UNPACK(Tfplugin6__UpgradeResourceState__Request, tfplugin6__upgrade_resource_state__request);
	Tfplugin6__UpgradeResourceState__Response resp =
	    TFPLUGIN6__UPGRADE_RESOURCE_STATE__RESPONSE__INIT;
	struct tf_diags d = {.arena = a};
	const struct tf_res *r = tf_res_find(tf_resources, req->type_name);
	json_t *st = NULL;

	if (req->raw_state && req->raw_state->json.len)
		st = tf_decode(req->raw_state->json.data, req->raw_state->json.len, true);
	if (!r || !st)
		tf_diag(&d, true, NULL, "Cannot read the stored state", "%s", req->type_name);
	else
		resp.upgraded_state = dv_encode(a, r->attrs, st);
	resp.diagnostics = d.v;
	resp.n_diagnostics = d.n;
	PACK(tfplugin6__upgrade_resource_state__response, &resp);
	json_decref(st);
	FREE_REQ();
	return true;
}

static bool
h_read(struct arena *a, const uint8_t *in, size_t inlen, uint8_t **out, size_t *outlen)
{
	UNPACK(Tfplugin6__ReadResource__Request, tfplugin6__read_resource__request);
	Tfplugin6__ReadResource__Response resp = TFPLUGIN6__READ_RESOURCE__RESPONSE__INIT;
	struct tf_diags d = {.arena = a};
	const struct tf_res *r = tf_res_find(tf_resources, req->type_name);
	json_t *cur = dv_decode(req->current_state), *api = NULL, *st = NULL;

	if (!r)
		tf_diag(&d, true, NULL, "Unknown resource type", "%s", req->type_name);
	else if (tf_res_read(r, cur, &api, &d)) {
		st = api ? state_merge(r, api, cur) : json_null();
		resp.new_state = dv_encode(a, r->attrs, st);
	}
	resp.diagnostics = d.v;
	resp.n_diagnostics = d.n;
	if (req->private_.len) {
		resp.private_.data = req->private_.data;
		resp.private_.len = req->private_.len;
	}
	PACK(tfplugin6__read_resource__response, &resp);
	json_decref(cur);
	json_decref(api);
	json_decref(st);
	FREE_REQ();
	return true;
}

static void
add_replace(struct arena *a, Tfplugin6__PlanResourceChange__Response *resp, const char *name,
    size_t cap)
{
	if (!resp->requires_replace)
		resp->requires_replace = arena_alloc(a, cap * sizeof *resp->requires_replace);
	resp->requires_replace[resp->n_requires_replace++] = path_build(a, name);
}

/* An object attribute the configuration sets: its computed members the configuration
 * leaves null are unknown on create (fleetd fills them in) and keep the prior value on
 * update. */
static void
plan_nested(const struct tf_attr *t, json_t *obj, json_t *cfg, json_t *prior)
{
	if (!(t->flags & F_OPT) || !json_is_object(obj) || tf_is_unknown(obj) ||
	    !json_is_object(cfg))
		return;
	for (const struct tf_attr *n = t->nested; n->name; n++) {
		json_t *pv = json_is_object(prior) ? json_object_get(prior, n->name) : NULL;

		if (!(n->flags & F_COMP) || !json_is_null(tf_get(cfg, n->name)))
			continue;
		if (pv != NULL && !json_is_null(pv))
			json_object_set(obj, n->name, pv);
		else if (!json_is_object(prior))
			json_object_set(obj, n->name, tf_unknown());
	}
}

static bool
h_plan(struct arena *a, const uint8_t *in, size_t inlen, uint8_t **out, size_t *outlen)
{
	UNPACK(Tfplugin6__PlanResourceChange__Request, tfplugin6__plan_resource_change__request);
	Tfplugin6__PlanResourceChange__Response resp =
	    TFPLUGIN6__PLAN_RESOURCE_CHANGE__RESPONSE__INIT;
	struct tf_diags d = {.arena = a};
	const struct tf_res *r = tf_res_find(tf_resources, req->type_name);
	json_t *prior = dv_decode(req->prior_state), *prop = dv_decode(req->proposed_new_state);
	json_t *cfg = dv_decode(req->config), *plan = NULL;
	size_t nattrs = 0;

	if (!r) {
		tf_diag(&d, true, NULL, "Unknown resource type", "%s", req->type_name);
		goto done;
	}
	for (const struct tf_attr *t = r->attrs; t->name; t++)
		nattrs++;
	if (json_is_null(prop)) {
		resp.planned_state = dv_encode(a, r->attrs, prop);
		goto done;
	}
	plan = tf_copy(prop);
	/* write-only values never enter a plan; on create, what fleetd decides is unknown */
	for (const struct tf_attr *t = r->attrs; t->name; t++) {
		if (t->flags & F_WO)
			json_object_set_new(plan, t->name, json_null());
		else if (json_is_null(prior) && (t->flags & F_COMP) && json_is_null(tf_get(cfg, t->name)))
			json_object_set(plan, t->name, tf_unknown());
		else if (t->ty == TY_OBJ && t->nested != NULL)
			plan_nested(t, tf_get(plan, t->name), tf_get(cfg, t->name),
			    json_is_null(prior) ? NULL : tf_get(prior, t->name));
	}
	/* on update: an immutable change replaces; any change makes version and friends unknown */
	if (!json_is_null(prior)) {
		bool changed = false;

		for (const struct tf_attr *t = r->attrs; t->name; t++) {
			if ((t->flags & F_WO) || !(t->flags & (F_REQ | F_OPT)))
				continue;
			if (tf_equal(tf_get(plan, t->name), tf_get(prior, t->name)))
				continue;
			changed = true;
			if (t->flags & F_RNEW)
				add_replace(a, &resp, t->name, nattrs);
		}
		if (changed)
			for (const struct tf_attr *t = r->attrs; t->name; t++)
				if (t->flags & F_VOL)
					json_object_set(plan, t->name, tf_unknown());
	}
	resp.planned_state = dv_encode(a, r->attrs, plan);
done:
	resp.diagnostics = d.v;
	resp.n_diagnostics = d.n;
	PACK(tfplugin6__plan_resource_change__response, &resp);
	json_decref(prior);
	json_decref(prop);
	json_decref(cfg);
	json_decref(plan);
	FREE_REQ();
	return true;
}

static bool
h_apply(struct arena *a, const uint8_t *in, size_t inlen, uint8_t **out, size_t *outlen)
{
	UNPACK(Tfplugin6__ApplyResourceChange__Request, tfplugin6__apply_resource_change__request);
	Tfplugin6__ApplyResourceChange__Response resp =
	    TFPLUGIN6__APPLY_RESOURCE_CHANGE__RESPONSE__INIT;
	struct tf_diags d = {.arena = a};
	const struct tf_res *r = tf_res_find(tf_resources, req->type_name);
	json_t *prior = dv_decode(req->prior_state), *plan = dv_decode(req->planned_state);
	json_t *cfg = dv_decode(req->config), *api = NULL, *st = NULL;

	if (!r) {
		tf_diag(&d, true, NULL, "Unknown resource type", "%s", req->type_name);
		goto done;
	}
	if (json_is_null(plan)) {
		if (tf_res_remove(r, prior, &d))
			resp.new_state = dv_encode(a, r->attrs, json_null());
		else
			resp.new_state = dv_encode(a, r->attrs, prior);
		goto done;
	}
	if (json_is_null(prior) ? tf_res_create(r, plan, cfg, &api, &d) :
	    tf_res_update(r, prior, plan, cfg, &api, &d)) {
		st = state_merge(r, api, plan);
		resp.new_state = dv_encode(a, r->attrs, st);
	} else
		resp.new_state = dv_encode(a, r->attrs, prior);
done:
	resp.diagnostics = d.v;
	resp.n_diagnostics = d.n;
	PACK(tfplugin6__apply_resource_change__response, &resp);
	json_decref(prior);
	json_decref(plan);
	json_decref(cfg);
	json_decref(api);
	json_decref(st);
	FREE_REQ();
	return true;
}

static bool
h_import(struct arena *a, const uint8_t *in, size_t inlen, uint8_t **out, size_t *outlen)
{
	UNPACK(Tfplugin6__ImportResourceState__Request, tfplugin6__import_resource_state__request);
	Tfplugin6__ImportResourceState__Response resp =
	    TFPLUGIN6__IMPORT_RESOURCE_STATE__RESPONSE__INIT;
	Tfplugin6__ImportResourceState__ImportedResource *ir = arena_alloc(a, sizeof *ir);
	struct tf_diags d = {.arena = a};
	const struct tf_res *r = tf_res_find(tf_resources, req->type_name);
	json_t *st = json_object();

	if (!r || !r->key) {
		tf_diag(&d, true, NULL, "Import not supported", "%s", req->type_name);
		goto done;
	}
	for (const struct tf_attr *t = r->attrs; t->name; t++)
		json_object_set_new(st, t->name, json_null());
	json_object_set_new(st, r->key, json_string(req->id));
	tfplugin6__import_resource_state__imported_resource__init(ir);
	ir->type_name = arena_strdup(a, req->type_name);
	ir->state = dv_encode(a, r->attrs, st);
	resp.imported_resources = arena_alloc(a, sizeof *resp.imported_resources);
	resp.imported_resources[0] = ir;
	resp.n_imported_resources = 1;
done:
	resp.diagnostics = d.v;
	resp.n_diagnostics = d.n;
	PACK(tfplugin6__import_resource_state__response, &resp);
	json_decref(st);
	FREE_REQ();
	return true;
}

static bool
h_read_data(struct arena *a, const uint8_t *in, size_t inlen, uint8_t **out, size_t *outlen)
{
	UNPACK(Tfplugin6__ReadDataSource__Request, tfplugin6__read_data_source__request);
	Tfplugin6__ReadDataSource__Response resp = TFPLUGIN6__READ_DATA_SOURCE__RESPONSE__INIT;
	struct tf_diags d = {.arena = a};
	const struct tf_res *r = tf_res_find(tf_data_sources, req->type_name);
	json_t *cfg = dv_decode(req->config), *st = NULL;

	if (!r)
		tf_diag(&d, true, NULL, "Unknown data source", "%s", req->type_name);
	else if (tf_data_read(r, cfg, &st, &d)) {
		known_or_null(st);
		resp.state = dv_encode(a, r->attrs, st);
	}
	resp.diagnostics = d.v;
	resp.n_diagnostics = d.n;
	PACK(tfplugin6__read_data_source__response, &resp);
	json_decref(cfg);
	json_decref(st);
	FREE_REQ();
	return true;
}

static bool
h_stop(struct arena *a, const uint8_t *in, size_t inlen, uint8_t **out, size_t *outlen)
{
	Tfplugin6__StopProvider__Response resp = TFPLUGIN6__STOP_PROVIDER__RESPONSE__INIT;

	(void)a;
	(void)in;
	(void)inlen;
	tf_stopping = 1;
	PACK(tfplugin6__stop_provider__response, &resp);
	return true;
}

typedef bool (*handler_fn)(struct arena *, const uint8_t *, size_t, uint8_t **, size_t *);

bool
tf_rpc(const char *method, const uint8_t *in, size_t inlen, uint8_t **out, size_t *outlen)
{
	static const struct {
		const char	*name;
		handler_fn	 fn;
	} tab[] = {
		{"GetProviderSchema", h_schema},
		{"ValidateProviderConfig", h_validate_provider},
		{"ValidateResourceConfig", h_validate_resource},
		{"ValidateDataResourceConfig", h_validate_data},
		{"UpgradeResourceState", h_upgrade},
		{"ConfigureProvider", h_configure},
		{"ReadResource", h_read},
		{"PlanResourceChange", h_plan},
		{"ApplyResourceChange", h_apply},
		{"ImportResourceState", h_import},
		{"ReadDataSource", h_read_data},
		{"StopProvider", h_stop},
	};

	for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
		if (strcmp(method, tab[i].name) == 0) {
			struct arena *a = arena_new();
			bool ok = tab[i].fn(a, in, inlen, out, outlen);
			arena_free(a);
			return ok;
		}
	}
	return false;
}
