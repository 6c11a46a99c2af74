/* cloudsim yaml: YAML documents (apply bodies, the KubeRay CRD files) to jansson values
 * through libyaml; plain scalars are typed as YAML 1.2's core schema types them. */
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "cloudsim/cs.h"

static json_t *
scalar(const yaml_node_t *n)
{
	const char *s = (const char *)n->data.scalar.value;
	size_t len = n->data.scalar.length;
	char *end;

	if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return json_stringn(s, len);
	if (len == 0 || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 || strcmp(s, "Null") == 0 ||
	    strcmp(s, "NULL") == 0)
		return json_null();
	if (strcmp(s, "true") == 0 || strcmp(s, "True") == 0 || strcmp(s, "TRUE") == 0)
		return json_true();
	if (strcmp(s, "false") == 0 || strcmp(s, "False") == 0 || strcmp(s, "FALSE") == 0)
		return json_false();
	if (strspn(s, "+-0123456789") == len && len < 19) {
		long long v = strtoll(s, &end, 10);

		if (*end == '\0')
			return json_integer(v);
	}
	if (strspn(s, "+-0123456789.eE") == len && strpbrk(s, "0123456789") != NULL) {
		double d = strtod(s, &end);

		if (*end == '\0')
			return json_real(d);
	}
	return json_stringn(s, len);
}

static json_t *
node_json(yaml_document_t *d, yaml_node_t *n, int depth)
{
	json_t *out = NULL;

	if (n == NULL || depth > 64)
		return NULL;
	switch (n->type) {
	case YAML_SCALAR_NODE:
		return scalar(n);
	case YAML_SEQUENCE_NODE: {
		yaml_node_item_t *it;

		out = json_array();
		for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
			json_t *v = node_json(d, yaml_document_get_node(d, *it), depth + 1);

			if (v == NULL) {
				json_decref(out);
				return NULL;
			}
			json_array_append_new(out, v);
		}
		return out;
	}
	case YAML_MAPPING_NODE: {
		yaml_node_pair_t *p;

		out = json_object();
		for (p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
			yaml_node_t *k = yaml_document_get_node(d, p->key);
			json_t *v;

			if (k == NULL || k->type != YAML_SCALAR_NODE) {
				json_decref(out);
				return NULL;
			}
			v = node_json(d, yaml_document_get_node(d, p->value), depth + 1);
			if (v == NULL) {
				json_decref(out);
				return NULL;
			}
			json_object_setn_new(out, (const char *)k->data.scalar.value,
			    k->data.scalar.length, v);
		}
		return out;
	}
	default:
		return NULL;
	}
}

json_t *
cs_yaml_load(const char *text, size_t len, bool all, char *err, size_t errlen)
{
	yaml_parser_t p;
	yaml_document_t d;
	json_t *docs = json_array(), *out = NULL;

	if (!yaml_parser_initialize(&p))
		abort();
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	for (;;) {
		yaml_node_t *root;
		json_t *v;

		if (!yaml_parser_load(&p, &d)) {
			snprintf(err, errlen, "yaml: line %zu: %s", p.problem_mark.line + 1,
			    p.problem ? p.problem : "invalid document");
			goto cleanup;
		}
		root = yaml_document_get_root_node(&d);
		if (root == NULL) {
			yaml_document_delete(&d);
			break;
		}
		v = node_json(&d, root, 0);
		yaml_document_delete(&d);
		if (v == NULL) {
			snprintf(err, errlen, "yaml: unsupported node (anchors, complex keys or "
			    "nesting deeper than 64)");
			goto cleanup;
		}
		json_array_append_new(docs, v);
	}
	if (all) {
		out = docs;
		docs = NULL;
	} else if (json_array_size(docs) == 1) {
		out = json_incref(json_array_get(docs, 0));
	} else {
		snprintf(err, errlen, "yaml: expected exactly one document, got %zu",
		    json_array_size(docs));
	}
cleanup:
	yaml_parser_delete(&p);
	json_decref(docs);
	return out;
}
