/* test_secret_scan: plants known secrets through the API and fleetd's configuration —
 * API token secrets (with Idempotency-Key, replayed), member-cluster bearer tokens (create
 * and replace), fleetd's provider keys and master key — then scans every column of every
 * table (idempotency_keys, audit_log and the rest, each row as text) and fleetd's log for
 * them.  None may appear: secrets reach the database as hashes or sealed only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness/harness.h"

#define js		harness_js
#define MAX_SECRETS	64

static struct harness_cs cs;
static struct fleetd_proc fd;
static char dburl[512];
static char *admin;
static const char *what[MAX_SECRETS];
static int nsecrets;

static void
plant(const char *kind, const char *s)
{
	assert_true(nsecrets < MAX_SECRETS);
	assert_true(s != NULL && strlen(s) >= 8);
	what[nsecrets++] = kind;
	/* the harness keeps it (harness_secrets): no later answer may hold it */
	harness_secret(s);
}

static int
setup(void **state)
{
	(void)state;
	harness_db_create("secretscan", dburl, sizeof(dburl));
	harness_cs_start(&cs, NULL, NULL);
	harness_cs_env_add(&cs, "FLEETD_WORKERS=poller,janitor,iam-verify");
	harness_cs_env_add(&cs, "FLEETD_LOG_LEVEL=debug");
	harness_fleetd_start(&fd, dburl, (const char *const *)cs.env);
	admin = harness_keep(harness_token(dburl, "admin", "*"));
	return 0;
}

/* The secrets fleetd holds from its environment: provider keys, the master key. */
static void
plant_config(void)
{
	static const char *const names[] = { "FLEETD_AWS_SECRET_ACCESS_KEY",
		"FLEETD_AZURE_CLIENT_SECRET", "FLEETD_MASTER_KEY", NULL };
	const char *keyfile = harness_cs_env(&cs, "FLEETD_GCP_KEY_FILE");
	json_t *key;

	for (int i = 0; names[i] != NULL; i++)
		plant(names[i], harness_cs_env(&cs, names[i]));
	assert_non_null(keyfile);
	key = json_load_file(keyfile, 0, NULL);
	assert_non_null(key);
	{
		/* a line from the middle of the private key's base64 */
		const char *pem = js(key, "private_key"), *nl = strchr(pem, '\n');
		char line[65];

		assert_non_null(nl);
		snprintf(line, sizeof(line), "%.64s", nl + 1);
		plant("gcp private key", line);
	}
	json_decref(key);
	plant("admin token", admin);
}

static void
plant_through_api(void)
{
	static const char *const clusters[] = { "test-gke-usc1", "test-aks-eus", "test-hp-usw2" };
	const char *hdr[] = { "Idempotency-Key: scan-token-1", NULL };
	static const char body[] = "{\"name\":\"scan\",\"role\":\"operator\",\"environments\":"
	    "[\"test\"]}";
	char cluster[40], *secret;

	harness_post_created(admin, "/v1/environments", "{\"name\":\"test\"}");
	/* token secrets: created with an Idempotency-Key (as fleetctl does), replayed */
	harness_call_h("POST", admin, body, hdr, "/v1/tokens");
	harness_expect_status(NULL, 201);
	secret = strdup(js(harness_r.json, "secret"));
	plant("token secret (idempotent create)", secret);
	harness_get_ok(secret, "/v1/jobs?environment=test");	/* the new token works */
	free(secret);
	harness_post_created(admin, "/v1/tokens", "{\"name\":\"scan2\",\"role\":\"viewer\","
	    "\"environments\":[\"*\"]}");
	secret = strdup(js(harness_r.json, "secret"));
	plant("token secret", secret);
	free(secret);
	/* cluster credentials, one cluster per provider; one replaced with a new token */
	for (size_t i = 0; i < sizeof(clusters) / sizeof(clusters[0]); i++) {
		plant("cluster bearer token", js(harness_cs_cluster(&cs, clusters[i]), "token"));
		harness_register(&cs, admin, clusters[i], NULL, cluster);
	}
	{
		json_t *c = harness_cs_cluster(&cs, "test-hp-usw2");
		json_t *b = json_pack("{s:s, s:s, s:s, s:{s:s}, s:s}", "name", "test-hp-usw2",
		    "api_server", js(c, "api_server"), "ca_cert", cs.ca_pem, "credentials",
		    "token", js(c, "token"), "provider_cluster_id", js(c, "provider_cluster_id"));

		harness_call_json("PUT", admin, b, "/v1/clusters/%s", cluster);
		harness_expect_status(NULL, 200);
		/* another CA text (the same certificate, one more newline) is an endpoint
		 * change: without the credentials 400, with them the probe runs and passes */
		{
			char *ca2 = NULL;

			assert_true(asprintf(&ca2, "%s\n", cs.ca_pem) > 0);
			json_object_set_new(b, "ca_cert", json_string(ca2));
			free(ca2);
		}
		json_object_del(b, "credentials");
		harness_call_json("PUT", admin, b, "/v1/clusters/%s", cluster);
		harness_expect_problem(NULL, 400, "cluster.credentials_required", "/credentials");
		json_object_set_new(b, "credentials", json_pack("{s:s}", "token", js(c, "token")));
		harness_call_json("PUT", admin, b, "/v1/clusters/%s", cluster);
		harness_expect_status(NULL, 200);
		json_decref(b);
	}
}

/* Every row of every table as text, searched for every planted secret. */
static int
scan_tables(void)
{
	PGresult *t = harness_sql_result("SELECT quote_ident(table_name) FROM"
	    " information_schema.tables WHERE table_schema = 'public' AND table_type ="
	    " 'BASE TABLE' ORDER BY 1");
	int found = 0, tables = PQntuples(t), n;
	const char *const *secrets = harness_secrets(&n);
	long rows = 0;

	assert_int_equal(n, nsecrets);

	for (int i = 0; i < tables; i++) {
		const char *tb = PQgetvalue(t, i, 0);

		rows += harness_sql_long("SELECT count(*) FROM %s", tb);
		for (int s = 0; s < nsecrets; s++) {
			/* position(): no pattern characters to escape */
			long n = harness_sql_long("SELECT count(*) FROM %s x WHERE"
			    " position('%s' in x::text) > 0", tb, secrets[s]);

			if (n > 0) {
				print_error("secret scan: %s found in %ld row(s) of table %s\n",
				    what[s], n, tb);
				found++;
			}
		}
	}
	print_message("secret scan: %d secrets x %d tables (%ld rows) searched\n", nsecrets,
	    tables, rows);
	assert_true(tables >= 10);
	PQclear(t);
	return found;
}

static int
scan_log(void)
{
	char *log = harness_slurp(fd.log);
	int found = 0, n;
	const char *const *secrets = harness_secrets(&n);

	assert_non_null(log);
	assert_int_equal(n, nsecrets);
	for (int s = 0; s < nsecrets; s++)
		if (strstr(log, secrets[s]) != NULL) {
			print_error("secret scan: %s found in fleetd's log\n", what[s]);
			found++;
		}
	print_message("secret scan: fleetd's log (%zu bytes) searched\n", strlen(log));
	free(log);
	return found;
}

static void
test_planted_secrets(void **state)
{
	int found;

	(void)state;
	plant_config();
	plant_through_api();
	/* the idempotency row is there (with its answer), the scan must see through it */
	assert_true(harness_sql_long("SELECT count(*) FROM idempotency_keys") >= 1);
	found = scan_tables() + scan_log();
	assert_int_equal(found, 0);
	/* the retry of the idempotent create answers without the secret (harness_secret) */
	harness_call_h("POST", admin, "{\"name\":\"scan\",\"role\":\"operator\","
	    "\"environments\":[\"test\"]}", (const char *const[]){ "Idempotency-Key: "
	    "scan-token-1", NULL }, "/v1/tokens");
	harness_expect_status(NULL, 201);
	assert_null(json_object_get(harness_r.json, "secret"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_planted_secrets),
	};

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
