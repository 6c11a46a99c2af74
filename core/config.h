/* config: one table of settings, from defaults, FLEETD_* environment variables and flags;
 * parsed once at start, read-only afterwards. */
#ifndef FLEET_CORE_CONFIG_H
#define FLEET_CORE_CONFIG_H

#include <stdbool.h>
#include <stdio.h>

#include "core/err.h"

struct config {
	char	*listen;		/* "127.0.0.1:8080" */
	int	 threads;		/* libmicrohttpd worker threads */
	int	 db_pool;		/* connections in the pool */
	char	*log_level;
	char	*database_url;
	long	 body_limit;		/* bytes */
	int	 conn_limit;		/* concurrent connections */
	int	 conn_timeout;		/* seconds of idle before a connection is dropped */
	char	*master_key;		/* base64 of 32 bytes; secret */
	char	*migrations_dir;
	char	*openapi_path;
	char	*tls_cert;
	char	*tls_key;
	int	 scheduler_interval_ms;
	int	 poll_interval_ms;
	int	 snapshot_max_age_s;
	int	 repair_notready_grace_s;	/* NotReady this long: the node is lost */
	char	*gcp_oauth_url;
	char	*gcp_iamcredentials_url;
	char	*gcp_iam_url;
	char	*gke_url;
	char	*gce_url;
	char	*gcp_sa_key_file;	/* fleetd's own service-account key (JSON) */
	char	*azure_login_url;
	char	*arm_url;
	char	*azure_tenant;
	char	*azure_client_id;
	char	*azure_client_secret;	/* secret */
	char	*azure_principal_id;	/* object id of fleetd's service principal */
	char	*aws_sts_url;
	char	*aws_iam_url;
	char	*sagemaker_url;
	char	*aws_access_key_id;
	char	*aws_secret_access_key;	/* secret */
	char	*aws_principal_arn;
	char	*gcp_principal;
	char	*instance_id;		/* replica name in logs and claims */
	char	*workers;		/* background loops to run, comma list */
	int	 lease_ttl_s;		/* a cluster lease lasts this long unrenewed */
	int	 dispatch_concurrency;	/* member-cluster calls in flight */
	int	 member_round;		/* a thread's calls at once in a round of applies */
	int	 status_watch;		/* 1: status follows watches, 0: polls */
	int	 status_full_period_s;	/* each followed job fully checked once per this */
	char	*kuberay_namespace;	/* the KubeRay operator's namespace on the members */
	int	 poll_concurrency;	/* capacity refresh calls in flight */
	int	 budget_interval_ms;	/* the budgets worker's round */
	int	 price_refresh_ms;	/* the prices worker's round, 0 off */
	char	*azure_prices_url;	/* Azure Retail Prices API base */
	char	*aws_prices_url;	/* AWS Price List Bulk API base */
	int	 janitor_interval_ms;	/* expired idempotency rows are deleted this often */
	int	 iam_verify_interval_s;	/* every active cloud's IAM pair is re-verified */
	long	 body_memory_limit;	/* bytes all in-flight request bodies may hold */
	int	 conn_per_ip;		/* concurrent connections from one address */
	int	 upload_timeout;	/* seconds a request may take to arrive in full */
	int	 evacuate_after_s;	/* failed health checks before "source": "unreachable" */
	char	*orphan_sweep;		/* delete | report */
	int	 sweep_interval_ms;
	int	 orphan_min_age_s;	/* a job's last change this old before its strays count */
	int	 sse_heartbeat_s;	/* seconds between SSE heartbeats */
	char	*metrics_token;		/* bearer token for /metrics; secret */
	int	 sse_per_token;		/* event streams one principal may hold open;
					 * 0 = threads - 1 */
	int	 sse_replay_max;	/* events a resumed stream replays from the database */
	int	 sse_max_streams;	/* event streams of this replica */
	char	*console_dir;		/* the web console's files */
	char	*oidc_issuer;		/* OpenID provider; unset: static tokens only */
	char	*oidc_audience;		/* the aud fleetd's access tokens carry */
	char	*oidc_groups_claim;	/* claim listing the user's groups */
	char	*oidc_groups;		/* JSON group map: role, environments, team */
	char	*oidc_ca;		/* PEM file of CAs for the provider; unset: system */
	int	 oidc_leeway;		/* seconds of clock skew on exp, nbf, iat */
	int	 oidc_key_grace;	/* seconds a key gone from the JWKS still verifies */
	int	 oidc_refresh_min;	/* seconds between JWKS fetches on unknown kids */
	int	 oidc_jwks_max_age;	/* seconds after which the JWKS is fetched again */
	char	*oidc_console_client_id; /* the console's public client (PKCE); unset: no SSO */
	char	*oidc_console_scopes;	/* scopes the console asks for */
	int	 webhook_interval_ms;	/* the webhooks worker's round */
	int	 webhook_timeout_ms;	/* one delivery attempt */
	int	 webhook_max_attempts;	/* then the delivery is dead */
	int	 webhook_backoff_ms;	/* first retry delay (doubles, jittered) */
	int	 webhook_backoff_max_ms;	/* cap on one retry delay */
};

extern struct config cfg;

/* Loads defaults, then the environment, then argv flags (--name value or --name=value)
 * starting at argv[first]; unknown flags are errors.  Remaining positional arguments
 * are left in *rest / *nrest. */
bool	config_load(int argc, char **argv, int first, char ***rest, int *nrest, struct err *e);
void	config_usage(FILE *f);
void	config_cleanup(void);
/* Sets one setting by its flag name ("db-pool"), as the environment would. */
bool	config_set(const char *name, const char *value, struct err *e);

#endif
