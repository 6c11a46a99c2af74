/* h_cost: /v1/costs (showback), /v1/prices (list prices and an environment's negotiated
 * overrides) and /v1/budgets. */
#include <stdlib.h>

#include "api/crud.h"
#include "api/handlers.h"
#include "queue/cost/budget.h"
#include "queue/cost/cost.h"

static const struct crud prices = {
	.type = "price", .code = "price.not_found", .noun = "price",
	.collection = "/v1/prices", .scoped = true, .get = cost_price_get,
	.create = cost_price_create, .replace = cost_price_replace, .del = cost_price_delete,
};

static const struct crud budgets = {
	.type = "budget", .code = "budget.not_found", .noun = "budget",
	.collection = "/v1/budgets", .scoped = true, .get = budget_get,
	.create = budget_create, .del = budget_delete,
};

HANDLER(h_cost_report)
{
	json_t *out = NULL;

	if (!cost_report(rq->db, rq_query(rq, "group_by"), rq_query(rq, "from"),
	    rq_query(rq, "to"), rq_query(rq, "environment"), rq->envs, rq->nenvs, &out, e))
		return false;
	rq_reply(rq, 200, out);
	return true;
}

HANDLER(h_cost_runs)
{
	const char *after;
	int limit;
	json_t *items = NULL;

	if (!rq_page(rq, &limit, &after, e))
		return false;
	if (after != NULL)
		return err_field(e, 400, "api.bad_cursor", "/query/after",
		    "runs are not paged: narrow from and to instead");
	if (!cost_runs_list(rq->db, rq_query(rq, "from"), rq_query(rq, "to"),
	    rq_query(rq, "environment"), rq->envs, rq->nenvs, limit, &items, e))
		return false;
	rq_reply(rq, 200, json_pack("{s:o}", "items", items));
	return true;
}

HANDLER(h_price_list)
{
	json_t *out = NULL;

	if (!cost_price_list(rq->db, rq_query(rq, "environment"), rq->envs, rq->nenvs, &out, e))
		return false;
	rq_reply(rq, 200, out);
	return true;
}

HANDLER(h_price_create)
{
	return crud_create(rq, &prices, NULL, e);
}

HANDLER(h_price_get)
{
	return crud_read(rq, &prices, e);
}

HANDLER(h_price_replace)
{
	return crud_replace(rq, &prices, e);
}

HANDLER(h_price_delete)
{
	return crud_delete(rq, &prices, e);
}

HANDLER(h_budget_list)
{
	const char *after;
	int limit;
	json_t *items = NULL;

	if (!rq_page(rq, &limit, &after, e) ||
	    !budget_list(rq->db, limit + 1, after, rq_query(rq, "environment"), rq->envs,
	    rq->nenvs, &items, e))
		return false;
	rq_reply(rq, 200, rq_page_reply(rq, items, limit, "id"));
	return true;
}

HANDLER(h_budget_create)
{
	return crud_create(rq, &budgets, NULL, e);
}

HANDLER(h_budget_get)
{
	return crud_read(rq, &budgets, e);
}

HANDLER(h_budget_delete)
{
	return crud_delete(rq, &budgets, e);
}
