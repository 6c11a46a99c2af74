/* config: the key table (as PgBouncer's), defaults, environment variables and flags. */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/config.h"

struct config cfg;

enum ctype { C_STR, C_INT, C_LONG };

struct ckey {
	const char	*name;		/* flag name without "--" */
	enum ctype	 type;
	size_t		 off;
	const char	*def;
	const char	*env;
	bool		 secret;
	const char	*help;
};

#define S(f) offsetof(struct config, f)

static const struct ckey keys[] = {
	{ "listen", C_STR, S(listen), "127.0.0.1:8080", "FLEETD_LISTEN", false,
	  "address:port to serve on" },
	{ "threads", C_INT, S(threads), "8", "FLEETD_THREADS", false,
	  "HTTP worker threads (each waits on its own database round trips)" },
	{ "db-pool", C_INT, S(db_pool), "16", "FLEETD_DB_POOL", false,
	  "database connections in the pool" },
	{ "log-level", C_STR, S(log_level), "info", "FLEETD_LOG_LEVEL", false,
	  "debug | info | warn | error" },
	{ "database-url", C_STR, S(database_url), NULL, "DATABASE_URL", true,
	  "libpq connection string (required)" },
	{ "body-limit", C_LONG, S(body_limit), "1048576", "FLEETD_BODY_LIMIT", false,
	  "largest request body in bytes (413 above)" },
	{ "conn-limit", C_INT, S(conn_limit), "1024", "FLEETD_CONN_LIMIT", false,
	  "concurrent HTTP connections" },
	{ "conn-timeout", C_INT, S(conn_timeout), "30", "FLEETD_CONN_TIMEOUT", false,
	  "seconds an idle or slow connection may live" },
	{ "master-key", C_STR, S(master_key), NULL, "FLEETD_MASTER_KEY", true,
	  "base64 of 32 bytes; encrypts cluster credentials at rest" },
	{ "migrations-dir", C_STR, S(migrations_dir), FLEETD_SOURCE_DIR "/migrations",
	  "FLEETD_MIGRATIONS_DIR", false, "folder of NNNN_name.sql files" },
	{ "openapi", C_STR, S(openapi_path), FLEETD_SOURCE_DIR "/api/openapi.yaml",
	  "FLEETD_OPENAPI", false, "the OpenAPI document served at /openapi.yaml" },
	{ "tls-cert", C_STR, S(tls_cert), NULL, "FLEETD_TLS_CERT", false,
	  "PEM certificate file; serves HTTPS when set with --tls-key" },
	{ "tls-key", C_STR, S(tls_key), NULL, "FLEETD_TLS_KEY", true,
	  "PEM private key file" },
	{ "scheduler-interval-ms", C_INT, S(scheduler_interval_ms), "1000",
	  "FLEETD_SCHEDULER_INTERVAL_MS", false, "scheduler timer between cycles" },
	{ "poll-interval-ms", C_INT, S(poll_interval_ms), "15000", "FLEETD_POLL_INTERVAL_MS",
	  false, "capacity refresh period" },
	{ "snapshot-max-age", C_INT, S(snapshot_max_age_s), "120", "FLEETD_SNAPSHOT_MAX_AGE",
	  false, "seconds after which a capacity snapshot is stale" },
	{ "repair-notready-grace", C_INT, S(repair_notready_grace_s), "60",
	  "FLEETD_REPAIR_NOTREADY_GRACE", false, "seconds a node under a job may stay NotReady "
	  "before it is repaired as lost" },
	{ "gcp-oauth-url", C_STR, S(gcp_oauth_url), "https://oauth2.googleapis.com",
	  "FLEETD_GCP_OAUTH_URL", false, "Google OAuth base URL" },
	{ "gcp-iamcredentials-url", C_STR, S(gcp_iamcredentials_url),
	  "https://iamcredentials.googleapis.com", "FLEETD_GCP_IAMCREDENTIALS_URL", false,
	  "Google IAM Credentials base URL" },
	{ "gcp-iam-url", C_STR, S(gcp_iam_url), "https://iam.googleapis.com", "FLEETD_GCP_IAM_URL",
	  false, "Google IAM API base URL (service accounts)" },
	{ "gke-url", C_STR, S(gke_url), "https://container.googleapis.com", "FLEETD_GKE_URL",
	  false, "GKE API base URL" },
	{ "gce-url", C_STR, S(gce_url), "https://compute.googleapis.com", "FLEETD_GCE_URL",
	  false, "Compute Engine API base URL" },
	{ "gcp-sa-key-file", C_STR, S(gcp_sa_key_file), NULL, "FLEETD_GCP_KEY_FILE", false,
	  "fleetd's own Google service-account key (JSON file)" },
	{ "azure-login-url", C_STR, S(azure_login_url), "https://login.microsoftonline.com",
	  "FLEETD_AZURE_LOGIN_URL", false, "Azure AD base URL" },
	{ "arm-url", C_STR, S(arm_url), "https://management.azure.com", "FLEETD_ARM_URL",
	  false, "Azure Resource Manager base URL" },
	{ "azure-tenant", C_STR, S(azure_tenant), NULL, "FLEETD_AZURE_TENANT_ID", false,
	  "fleetd's Azure AD tenant" },
	{ "azure-client-id", C_STR, S(azure_client_id), NULL, "FLEETD_AZURE_CLIENT_ID", false,
	  "fleetd's Azure app registration" },
	{ "azure-client-secret", C_STR, S(azure_client_secret), NULL,
	  "FLEETD_AZURE_CLIENT_SECRET", true, "its client secret" },
	{ "azure-principal-id", C_STR, S(azure_principal_id), NULL, "FLEETD_AZURE_PRINCIPAL_ID",
	  false, "object id of fleetd's service principal (default: its client id)" },
	{ "aws-sts-url", C_STR, S(aws_sts_url), "https://sts.amazonaws.com",
	  "FLEETD_AWS_STS_URL", false, "AWS STS endpoint" },
	{ "aws-iam-url", C_STR, S(aws_iam_url), "https://iam.amazonaws.com",
	  "FLEETD_AWS_IAM_URL", false, "AWS IAM endpoint" },
	{ "sagemaker-url", C_STR, S(sagemaker_url), NULL, "FLEETD_SAGEMAKER_URL", false,
	  "SageMaker endpoint (default: the region's api.sagemaker host)" },
	{ "aws-access-key-id", C_STR, S(aws_access_key_id), NULL, "FLEETD_AWS_ACCESS_KEY_ID",
	  false, "fleetd's base AWS credentials" },
	{ "aws-secret-access-key", C_STR, S(aws_secret_access_key), NULL,
	  "FLEETD_AWS_SECRET_ACCESS_KEY", true, "their secret" },
	{ "aws-principal-arn", C_STR, S(aws_principal_arn), "arn:aws:iam::000000000000:role/fleetd",
	  "FLEETD_AWS_PRINCIPAL_ARN", false, "principal trusted by control-plane roles" },
	{ "gcp-principal", C_STR, S(gcp_principal),
	  "fleetd@fleet-control.iam.gserviceaccount.com", "FLEETD_GCP_PRINCIPAL", false,
	  "service account that impersonates control-plane accounts" },
	{ "workers", C_STR, S(workers),
	  "scheduler,dispatch,status,poller,mover,updater,janitor,iam-verify,sweep,webhooks,budgets,"
	  "prices",
	  "FLEETD_WORKERS", false, "background loops this replica runs (comma list; none = API only)" },
	{ "lease-ttl", C_INT, S(lease_ttl_s), "10", "FLEETD_LEASE_TTL", false,
	  "seconds a member cluster's lease lasts unrenewed: how long a dead replica's clusters"
	  " wait before another takes them" },
	{ "dispatch-concurrency", C_INT, S(dispatch_concurrency), "64",
	  "FLEETD_DISPATCH_CONCURRENCY", false, "member-cluster calls in flight" },
	{ "member-round", C_INT, S(member_round), "4", "FLEETD_MEMBER_ROUND", false,
	  "server-side applies a worker thread sends at once in a round (a dispatch batch's"
	  " signal objects, its Ray objects): each open one is a TLS connection of that thread's"
	  " to the member (HTTP/1.1), so threads x this many handshakes at most per member" },
	{ "status-watch", C_INT, S(status_watch), "1", "FLEETD_STATUS_WATCH", false,
	  "status follows member clusters with watches (0: polling only)" },
	{ "status-full-period", C_INT, S(status_full_period_s), "5", "FLEETD_STATUS_FULL_PERIOD",
	  false, "seconds over which the status worker checks each followed job in full once"
	  " (spread: a slice of the leased clusters each second; watch events and job changes"
	  " are acted on at once; 1 to 20)" },
	{ "kuberay-namespace", C_STR, S(kuberay_namespace), "default",
	  "FLEETD_KUBERAY_NAMESPACE", false, "namespace of the KubeRay operator on the members: "
	  "the only one each job's NetworkPolicy admits to the Ray dashboard ports" },
	{ "poll-concurrency", C_INT, S(poll_concurrency), "256", "FLEETD_POLL_CONCURRENCY", false,
	  "provider and Kubernetes calls in flight during a capacity refresh" },
	{ "console-dir", C_STR, S(console_dir), FLEETD_SOURCE_DIR "/console", "FLEETD_CONSOLE_DIR",
	  false, "folder of the web console's files (index.html, app.js, app.css)" },
	{ "sse-heartbeat", C_INT, S(sse_heartbeat_s), "15", "FLEETD_SSE_HEARTBEAT", false,
	  "seconds between heartbeats of an idle event stream" },
	{ "metrics-token", C_STR, S(metrics_token), NULL, "FLEETD_METRICS_TOKEN", true,
	  "bearer token a scraper sends to /metrics (a token for every environment also may)" },
	{ "sse-per-token", C_INT, S(sse_per_token), "0", "FLEETD_SSE_PER_TOKEN", false,
	  "event streams one principal (a static token, or an OIDC user) may hold open (429"
	  " above); 0 = one less than threads" },
	{ "sse-replay-max", C_INT, S(sse_replay_max), "1000", "FLEETD_SSE_REPLAY_MAX", false,
	  "events a resumed stream replays from the database; past it a reset event" },
	{ "sse-max-streams", C_INT, S(sse_max_streams), "512", "FLEETD_SSE_MAX_STREAMS", false,
	  "event streams this replica serves at once (429 above)" },
	{ "instance-id", C_STR, S(instance_id), NULL, "FLEETD_INSTANCE_ID", false,
	  "replica name (default: hostname-pid)" },
	{ "budget-interval-ms", C_INT, S(budget_interval_ms), "60000",
	  "FLEETD_BUDGET_INTERVAL_MS", false,
	  "how often budgets are checked for thresholds crossed by running jobs" },
	{ "price-refresh-ms", C_INT, S(price_refresh_ms), "0", "FLEETD_PRICE_REFRESH_MS", false,
	  "how often list prices are read from the providers' public price sources (0: never;"
	  " the shipped table and overrides)" },
	{ "azure-prices-url", C_STR, S(azure_prices_url), "https://prices.azure.com",
	  "FLEETD_AZURE_PRICES_URL", false, "Azure Retail Prices API base URL" },
	{ "aws-prices-url", C_STR, S(aws_prices_url), "https://pricing.us-east-1.amazonaws.com",
	  "FLEETD_AWS_PRICES_URL", false, "AWS Price List Bulk API base URL" },
	{ "janitor-interval-ms", C_INT, S(janitor_interval_ms), "600000",
	  "FLEETD_JANITOR_INTERVAL_MS", false, "how often expired idempotency keys are deleted" },
	{ "iam-verify-interval", C_INT, S(iam_verify_interval_s), "86400",
	  "FLEETD_IAM_VERIFY_INTERVAL", false,
	  "seconds between re-verifications of every active cloud's IAM pair" },
	{ "body-memory-limit", C_LONG, S(body_memory_limit), "67108864",
	  "FLEETD_BODY_MEMORY_LIMIT", false,
	  "bytes all in-flight request bodies may hold together (503 above)" },
	{ "conn-per-ip", C_INT, S(conn_per_ip), "64", "FLEETD_CONN_PER_IP", false,
	  "concurrent HTTP connections from one address" },
	{ "upload-timeout", C_INT, S(upload_timeout), "30", "FLEETD_UPLOAD_TIMEOUT", false,
	  "seconds a request (headers and body) may take to arrive" },
	{ "evacuate-after", C_INT, S(evacuate_after_s), "120", "FLEETD_EVACUATE_AFTER",
	  false, "seconds of failed health checks before a source may be evacuated" },
	{ "orphan-sweep", C_STR, S(orphan_sweep), "delete", "FLEETD_ORPHAN_SWEEP", false,
	  "what the orphan sweep does with an orphaned object: delete or report" },
	{ "sweep-interval-ms", C_INT, S(sweep_interval_ms), "30000", "FLEETD_SWEEP_INTERVAL_MS",
	  false, "milliseconds between orphan sweeps" },
	{ "orphan-min-age", C_INT, S(orphan_min_age_s), "60", "FLEETD_ORPHAN_MIN_AGE", false,
	  "seconds a job's state must be settled before its stray objects count as orphans" },
	{ "oidc-issuer", C_STR, S(oidc_issuer), NULL, "FLEETD_OIDC_ISSUER", false,
	  "OpenID provider whose access tokens (JWT) are accepted; unset: static tokens only" },
	{ "oidc-audience", C_STR, S(oidc_audience), NULL, "FLEETD_OIDC_AUDIENCE", false,
	  "the aud an access token must name (required with an issuer)" },
	{ "oidc-groups-claim", C_STR, S(oidc_groups_claim), "groups", "FLEETD_OIDC_GROUPS_CLAIM",
	  false, "claim that lists the user's groups" },
	{ "oidc-groups", C_STR, S(oidc_groups), "{}", "FLEETD_OIDC_GROUPS", false,
	  "JSON {\"group\": {\"role\": R, \"environments\": [..], \"team\": T}}" },
	{ "oidc-ca", C_STR, S(oidc_ca), NULL, "FLEETD_OIDC_CA", false,
	  "PEM file of the CAs the provider's certificate chains to (default: the system's)" },
	{ "oidc-leeway", C_INT, S(oidc_leeway), "60", "FLEETD_OIDC_LEEWAY", false,
	  "seconds of clock skew allowed on exp, nbf and iat" },
	{ "oidc-key-grace", C_INT, S(oidc_key_grace), "300", "FLEETD_OIDC_KEY_GRACE", false,
	  "seconds a key that left the JWKS still verifies tokens" },
	{ "oidc-refresh-min", C_INT, S(oidc_refresh_min), "30", "FLEETD_OIDC_REFRESH_MIN", false,
	  "fewest seconds between JWKS fetches (an unknown kid asks for one)" },
	{ "oidc-jwks-max-age", C_INT, S(oidc_jwks_max_age), "3600", "FLEETD_OIDC_JWKS_MAX_AGE",
	  false, "seconds after which the JWKS is fetched again" },
	{ "oidc-console-client-id", C_STR, S(oidc_console_client_id), NULL,
	  "FLEETD_OIDC_CONSOLE_CLIENT_ID", false,
	  "the console's public client at the issuer (code flow with PKCE); unset: no SSO button" },
	{ "oidc-console-scopes", C_STR, S(oidc_console_scopes), "openid email offline_access",
	  "FLEETD_OIDC_CONSOLE_SCOPES", false, "scopes the console's SSO login asks for" },
	{ "webhook-interval-ms", C_INT, S(webhook_interval_ms), "1000",
	  "FLEETD_WEBHOOK_INTERVAL_MS", false, "milliseconds between rounds of the webhooks worker" },
	{ "webhook-timeout-ms", C_INT, S(webhook_timeout_ms), "10000", "FLEETD_WEBHOOK_TIMEOUT_MS",
	  false, "milliseconds one webhook delivery attempt may take" },
	{ "webhook-max-attempts", C_INT, S(webhook_max_attempts), "8",
	  "FLEETD_WEBHOOK_MAX_ATTEMPTS", false, "attempts before a delivery is dead-lettered" },
	{ "webhook-backoff-ms", C_INT, S(webhook_backoff_ms), "1000", "FLEETD_WEBHOOK_BACKOFF_MS",
	  false, "first retry delay of a webhook delivery (doubles each attempt, jittered)" },
	{ "webhook-backoff-max-ms", C_INT, S(webhook_backoff_max_ms), "600000",
	  "FLEETD_WEBHOOK_BACKOFF_MAX_MS", false, "cap on one webhook retry delay" },
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static const struct ckey *
find(const char *name, size_t len)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (strlen(keys[i].name) == len && strncmp(keys[i].name, name, len) == 0)
			return &keys[i];
	return NULL;
}

static bool
assign(const struct ckey *k, const char *value, struct err *e)
{
	char *base = (char *)&cfg;
	char *end;
	long v;

	switch (k->type) {
	case C_STR: {
		char **p = (char **)(base + k->off);

		free(*p);
		*p = value ? strdup(value) : NULL;
		return true;
	}
	case C_INT:
	case C_LONG:
		errno = 0;
		v = strtol(value, &end, 10);
		if (errno != 0 || end == value || *end != '\0' || v < 0 ||
		    (k->type == C_INT && v > INT_MAX))
			return err_set(e, 400, "config.bad_value",
			    "%s must be a non-negative integer", k->name);
		if (k->type == C_INT)
			*(int *)(base + k->off) = (int)v;
		else
			*(long *)(base + k->off) = v;
		return true;
	}
	return false;
}

bool
config_set(const char *name, const char *value, struct err *e)
{
	const struct ckey *k = find(name, strlen(name));

	if (k == NULL)
		return err_set(e, 400, "config.unknown", "unknown setting %s", name);
	return assign(k, value, e);
}

bool
config_load(int argc, char **argv, int first, char ***rest, int *nrest, struct err *e)
{
	static char *positional[64];
	int np = 0;

	config_cleanup();
	for (size_t i = 0; i < NKEYS; i++) {
		const char *env = getenv(keys[i].env);
		const char *v = (env != NULL && *env != '\0') ? env : keys[i].def;

		if (v != NULL && !assign(&keys[i], v, e))
			return false;
	}
	for (int i = first; i < argc; i++) {
		const char *a = argv[i], *eq, *val;
		const struct ckey *k;

		if (strncmp(a, "--", 2) != 0) {
			if (np < 64)
				positional[np++] = argv[i];
			continue;
		}
		a += 2;
		eq = strchr(a, '=');
		k = find(a, eq ? (size_t)(eq - a) : strlen(a));
		if (k == NULL) {
			if (np < 64)
				positional[np++] = argv[i];	/* command flags, e.g. --migrate */
			continue;
		}
		if (eq != NULL)
			val = eq + 1;
		else if (i + 1 < argc)
			val = argv[++i];
		else
			return err_set(e, 400, "config.missing_value", "--%s needs a value", k->name);
		if (!assign(k, val, e))
			return false;
	}
	if (cfg.instance_id == NULL) {
		char host[128] = "fleetd", buf[160];

		gethostname(host, sizeof(host) - 1);
		snprintf(buf, sizeof(buf), "%s-%d", host, (int)getpid());
		cfg.instance_id = strdup(buf);
	}
	if (cfg.threads < 1 || cfg.db_pool < 1)
		return err_set(e, 400, "config.bad_value", "threads and db-pool must be at least 1");
	if (cfg.sse_per_token < 0 || cfg.sse_replay_max < 1)
		return err_set(e, 400, "config.bad_value",
		    "sse-per-token must be at least 0 and sse-replay-max at least 1");
	if (cfg.lease_ttl_s < 3)	/* renewed every second, given up a second early */
		return err_set(e, 400, "config.bad_value", "lease-ttl must be at least 3 seconds");
	if (rest != NULL) {
		*rest = positional;
		*nrest = np;
	}
	return true;
}

void
config_usage(FILE *f)
{
	fprintf(f, "settings (flag / environment variable / default):\n");
	for (size_t i = 0; i < NKEYS; i++)
		fprintf(f, "  --%-24s %-30s %s\n      %s\n", keys[i].name, keys[i].env,
		    keys[i].secret ? "(secret)" : (keys[i].def ? keys[i].def : "(unset)"),
		    keys[i].help);
}

void
config_cleanup(void)
{
	char *base = (char *)&cfg;

	for (size_t i = 0; i < NKEYS; i++) {
		if (keys[i].type == C_STR) {
			char **p = (char **)(base + keys[i].off);

			free(*p);
			*p = NULL;
		}
	}
}
