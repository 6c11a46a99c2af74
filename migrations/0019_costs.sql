-- Cost and budgets (issue 27).  Each time a job starts running (job_transition to
-- 'running') a job_runs row keeps the placement it runs on; the run ends at the job's next
-- state event leaving 'running' (by id: both transitions lock the job row, so ids of one
-- job's events are in commit order).  cost_runs() prices each run: an environment's
-- override (negotiated price), else the driver's price_hour, else the shipped list price.
CREATE TABLE job_runs (
	id		bigserial PRIMARY KEY,
	job_id		uuid NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
	attempt		int NOT NULL,
	event_id	bigint NOT NULL,	-- the job_events row of the start
	started_at	timestamptz NOT NULL DEFAULT now(),
	placement	jsonb NOT NULL,		-- jobs.placement at the start
	accel_per_node	int NOT NULL DEFAULT 0	-- of the worker pool, from capacity
);
CREATE INDEX job_runs_job ON job_runs (job_id, id);
CREATE INDEX job_runs_started ON job_runs (started_at);

-- Shipped list prices per node-hour (USD), used where the driver reports none.  On-demand
-- list prices as published, approximate, to be replaced by an override where a contract
-- says otherwise:
--   gke: https://cloud.google.com/compute/gpus-pricing and
--        https://cloud.google.com/compute/vm-instance-pricing (a3, g2, a2 series)
--   aks: Azure Retail Prices API, https://prices.azure.com/api/retail/prices
--        ?$filter=serviceName eq 'Virtual Machines' and armRegionName eq 'eastus'
--   hyperpod: https://aws.amazon.com/sagemaker/pricing/ (HyperPod instances)
CREATE TABLE prices (
	provider	text NOT NULL CHECK (provider IN ('gke', 'aks', 'hyperpod')),
	region		text NOT NULL,
	machine_type	text NOT NULL,
	spot		boolean NOT NULL DEFAULT false,
	price_hour	double precision NOT NULL CHECK (price_hour >= 0),
	source		text NOT NULL,
	PRIMARY KEY (provider, region, machine_type, spot)
);
INSERT INTO prices (provider, region, machine_type, spot, price_hour, source) VALUES
  ('gke', 'us-central1', 'a3-highgpu-8g', false, 88.49, 'https://cloud.google.com/compute/gpus-pricing'),
  ('gke', 'us-central1', 'g2-standard-8', false, 0.85, 'https://cloud.google.com/compute/gpus-pricing'),
  ('gke', 'us-central1', 'g2-standard-48', false, 4.00, 'https://cloud.google.com/compute/gpus-pricing'),
  ('gke', 'us-central1', 'a2-highgpu-1g', false, 3.67, 'https://cloud.google.com/compute/gpus-pricing'),
  ('gke', 'us-central1', 'e2-standard-8', false, 0.27, 'https://cloud.google.com/compute/vm-instance-pricing'),
  ('aks', 'eastus', 'Standard_ND96isr_H100_v5', false, 98.32, 'https://prices.azure.com/api/retail/prices'),
  ('aks', 'eastus', 'Standard_NC24ads_A100_v4', false, 3.67, 'https://prices.azure.com/api/retail/prices'),
  ('aks', 'eastus', 'Standard_D16s_v5', false, 0.77, 'https://prices.azure.com/api/retail/prices'),
  ('hyperpod', 'us-west-2', 'ml.p5.48xlarge', false, 98.32, 'https://aws.amazon.com/sagemaker/pricing/'),
  ('hyperpod', 'us-east-1', 'ml.p5.48xlarge', false, 98.32, 'https://aws.amazon.com/sagemaker/pricing/'),
  ('hyperpod', 'us-west-2', 'ml.p4de.24xlarge', false, 40.96, 'https://aws.amazon.com/sagemaker/pricing/'),
  ('hyperpod', 'us-west-2', 'ml.g6.48xlarge', false, 13.35, 'https://aws.amazon.com/sagemaker/pricing/'),
  ('hyperpod', 'us-west-2', 'ml.m5.4xlarge', false, 0.92, 'https://aws.amazon.com/sagemaker/pricing/'),
  ('hyperpod', 'us-east-1', 'ml.m5.4xlarge', false, 0.92, 'https://aws.amazon.com/sagemaker/pricing/');

-- Negotiated prices of one environment (admin, audited): win over the driver and the list.
CREATE TABLE price_overrides (
	id		uuid PRIMARY KEY,
	environment	text NOT NULL REFERENCES environments (name) ON UPDATE CASCADE,
	provider	text NOT NULL CHECK (provider IN ('gke', 'aks', 'hyperpod')),
	region		text NOT NULL,
	machine_type	text NOT NULL,
	spot		boolean NOT NULL DEFAULT false,
	price_hour	double precision NOT NULL CHECK (price_hour >= 0),
	note		text NOT NULL DEFAULT '',
	version		int NOT NULL DEFAULT 1,
	created_at	timestamptz NOT NULL DEFAULT now(),
	updated_at	timestamptz NOT NULL DEFAULT now(),
	UNIQUE (environment, provider, region, machine_type, spot)
);

-- Monthly budgets of an environment, one of its queues, or a team (spec.labels.team).
CREATE TABLE budgets (
	id		uuid PRIMARY KEY,
	name		text NOT NULL,
	environment	text NOT NULL REFERENCES environments (name) ON UPDATE CASCADE,
	scope		text NOT NULL CHECK (scope IN ('environment', 'queue', 'team')),
	target		text,			-- the queue's name or the team; NULL for environment
	amount_usd	double precision NOT NULL CHECK (amount_usd > 0),
	period		text NOT NULL DEFAULT 'month' CHECK (period = 'month'),
	soft_percent	double precision NOT NULL DEFAULT 80
			CHECK (soft_percent >= 80 AND soft_percent <= 100),
	hard		boolean NOT NULL DEFAULT false,
	version		int NOT NULL DEFAULT 1,
	created_at	timestamptz NOT NULL DEFAULT now(),
	updated_at	timestamptz NOT NULL DEFAULT now(),
	CHECK ((scope = 'environment') = (target IS NULL)),
	UNIQUE (environment, name)
);

-- Thresholds already announced, once per budget, period and level.
CREATE TABLE budget_marks (
	budget_id	uuid NOT NULL REFERENCES budgets (id) ON DELETE CASCADE,
	period_start	timestamptz NOT NULL,
	level		text NOT NULL CHECK (level IN ('soft', 'exhausted')),
	job_id		uuid,			-- the job whose event announced it
	at		timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (budget_id, period_start, level)
);

-- Every run overlapping [t0, t1), clipped to it, with its GPU-hours and dollars.  A run
-- on an accelerator pool costs its share of the nodes (accel / accel_per_node); a run of
-- no accelerator costs one node of its pool.
CREATE FUNCTION cost_runs(t0 timestamptz, t1 timestamptz)
RETURNS TABLE (job_id uuid, attempt int, environment text, queue text, team text,
	provider text, region text, cluster_id uuid, cluster_name text, pool text,
	machine_type text, spot boolean, accel int, started_at timestamptz,
	ended_at timestamptz, hours double precision, gpu_hours double precision,
	price_hour double precision, price_source text, dollars double precision)
LANGUAGE sql STABLE AS $$
	SELECT a.job_id, a.attempt, a.environment, a.queue, a.team, a.provider, a.region,
	  a.cluster_id, a.cluster_name, a.pool, a.machine_type, a.spot, a.accel, a.started_at,
	  a.ended_at, h.h, h.h * a.accel, pr.price, pr.source,
	  h.h * pr.price * CASE WHEN a.accel > 0 THEN a.accel::double precision /
	    greatest(a.accel_per_node, 1) ELSE 1 END
	FROM (SELECT r.job_id, r.attempt, j.environment, q.name AS queue,
	    j.spec->'labels'->>'team' AS team, r.placement->>'provider' AS provider,
	    r.placement->>'region' AS region, (r.placement->>'cluster')::uuid AS cluster_id,
	    r.placement->>'cluster_name' AS cluster_name, r.placement->>'pool' AS pool,
	    r.placement->>'machine_type' AS machine_type,
	    coalesce((r.placement->>'spot')::boolean, false) AS spot,
	    coalesce((r.placement->>'accel')::int, 0) AS accel, r.accel_per_node,
	    coalesce((r.placement->>'price_hour')::double precision, 0) AS driver_price,
	    r.started_at,
	    (SELECT x.at FROM job_events x WHERE x.job_id = r.job_id AND x.id > r.event_id
	      AND x.type = 'state' AND x.from_state = 'running' ORDER BY x.id LIMIT 1) AS ended_at
	  FROM job_runs r JOIN jobs j ON j.id = r.job_id JOIN queues q ON q.id = j.queue_id
	  WHERE r.started_at < t1 AND (j.finished_at IS NULL OR j.finished_at > t0)) a
	CROSS JOIN LATERAL (SELECT greatest(extract(epoch FROM
	    least(coalesce(a.ended_at, now()), t1) - greatest(a.started_at, t0)), 0)::double precision
	    / 3600.0 AS h) h
	CROSS JOIN LATERAL (SELECT coalesce(o.price_hour, nullif(a.driver_price, 0), l.price_hour, 0)
	    AS price, CASE WHEN o.price_hour IS NOT NULL THEN 'override'
	    WHEN a.driver_price > 0 THEN 'provider' WHEN l.price_hour IS NOT NULL THEN 'list'
	    ELSE 'none' END AS source
	  FROM (SELECT 1) one
	  LEFT JOIN price_overrides o ON o.environment = a.environment
	    AND o.provider = a.provider AND o.region = a.region
	    AND o.machine_type = a.machine_type AND o.spot = a.spot
	  LEFT JOIN prices l ON l.provider = a.provider AND l.region = a.region
	    AND l.machine_type = a.machine_type AND l.spot = a.spot) pr
	WHERE coalesce(a.ended_at, now()) > t0
$$;

-- Budget thresholds are job events of type 'budget_threshold' (on the job whose submission
-- found the budget crossed): webhook type budget.threshold.
CREATE OR REPLACE FUNCTION webhook_event_type(etype text, to_state text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE
	  WHEN etype = 'state' AND to_state = 'failed' THEN 'job.failed'
	  WHEN etype = 'state' THEN 'job.state_changed'
	  WHEN etype = 'submitted' THEN 'job.submitted'
	  WHEN etype = 'budget_threshold' THEN 'budget.threshold'
	  WHEN etype IN ('move', 'moved', 'withdrawn', 'fenced', 'cancel_requested',
	    'spec_update_requested', 'orphan_deleted') THEN 'job.operation'
	  ELSE 'job.event' END
$$;
