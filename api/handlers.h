/* handlers: thin — unpack the request, call the module, pack the answer. */
#ifndef FLEET_API_HANDLERS_H
#define FLEET_API_HANDLERS_H

#include "api/server.h"

#define HANDLER(name) bool name(struct request *rq, struct err *e)

HANDLER(h_healthz);
HANDLER(h_readyz);
HANDLER(h_metrics);
HANDLER(h_openapi);

HANDLER(h_env_list);
HANDLER(h_env_create);
HANDLER(h_env_get);
HANDLER(h_env_replace);
HANDLER(h_env_delete);

HANDLER(h_token_list);
HANDLER(h_token_create);
HANDLER(h_token_get);
HANDLER(h_token_delete);

HANDLER(h_team_list);
HANDLER(h_team_create);
HANDLER(h_team_get);
HANDLER(h_team_delete);

HANDLER(h_audit_list);

HANDLER(h_cloud_list);
HANDLER(h_cloud_create);
HANDLER(h_cloud_get);
HANDLER(h_cloud_replace);
HANDLER(h_cloud_delete);
HANDLER(h_cloud_iam);
HANDLER(h_cloud_iam_rotate);
HANDLER(h_cloud_iam_verify);

HANDLER(h_cluster_create);
HANDLER(h_cluster_list);
HANDLER(h_cluster_get);
HANDLER(h_cluster_replace);
HANDLER(h_cluster_delete);
HANDLER(h_cluster_cordon);
HANDLER(h_cluster_uncordon);

HANDLER(h_queue_create);
HANDLER(h_queue_list);
HANDLER(h_queue_get);
HANDLER(h_queue_status);
HANDLER(h_queue_replace);
HANDLER(h_queue_delete);
HANDLER(h_pc_create);
HANDLER(h_pc_list);
HANDLER(h_pc_get);
HANDLER(h_pc_replace);
HANDLER(h_pc_delete);

HANDLER(h_flavor_list);
HANDLER(h_flavor_get);
HANDLER(h_flavor_put);
HANDLER(h_flavor_delete);

HANDLER(h_job_submit);
HANDLER(h_job_list);
HANDLER(h_job_get);
HANDLER(h_job_cancel);
HANDLER(h_job_update_spec);
HANDLER(h_job_events);
HANDLER(h_job_manifest);
HANDLER(h_job_dashboard);
HANDLER(h_job_placement);
HANDLER(h_job_postmortem);
HANDLER(h_job_move);
HANDLER(h_cluster_drain);
HANDLER(h_region_drain);
HANDLER(h_operation_list);
HANDLER(h_operation_get);
HANDLER(h_operation_cancel);
HANDLER(h_capacity_summary);
HANDLER(h_capacity_search);
HANDLER(h_events);
HANDLER(h_webhook_create);
HANDLER(h_cost_report);
HANDLER(h_cost_runs);
HANDLER(h_price_list);
HANDLER(h_price_create);
HANDLER(h_price_get);
HANDLER(h_price_replace);
HANDLER(h_price_delete);
HANDLER(h_budget_list);
HANDLER(h_budget_create);
HANDLER(h_budget_get);
HANDLER(h_budget_delete);
HANDLER(h_webhook_list);
HANDLER(h_webhook_get);
HANDLER(h_webhook_delete);
HANDLER(h_webhook_rotate);
HANDLER(h_webhook_replay);
HANDLER(h_webhook_deliveries);
HANDLER(h_console_index);
HANDLER(h_console_js);
HANDLER(h_console_css);
HANDLER(h_whoami);
HANDLER(h_console_config);
/* the console's Content-Security-Policy (connect-src adds the OIDC issuer's origin with SSO) */
const char *console_csp(void);
/* h_job_events with follow=true: the SSE stream of one job (*handled says it answered). */
bool	h_job_events_follow(struct request *rq, bool *handled, struct err *e);

#endif
