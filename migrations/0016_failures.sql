-- 0016: a fleet that fails (issue 24). job_postmortems: the bounded record of an attempt
-- kept before its objects go (queue/follow/status_postmortem.c says what is in it and its
-- bounds; at most one per attempt, at most 64 KiB). jobs.infra_retries: new attempts given
-- after infrastructure or preemption failures; jobs.avoid_nodes: the nodes those failures
-- happened on, never used again by the job (a jsonb array of {cluster_id, node, rack}).
-- queues.max_infra_retries: the bound when the job's spec names none.
CREATE TABLE job_postmortems (
	job_id		uuid NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
	attempt		int NOT NULL,
	cluster_id	uuid,
	trigger		text NOT NULL,
	recorded_at	timestamptz NOT NULL DEFAULT now(),
	record		jsonb NOT NULL CHECK (octet_length(record::text) <= 65536),
	PRIMARY KEY (job_id, attempt)
);
ALTER TABLE jobs ADD COLUMN infra_retries int NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN avoid_nodes jsonb;
ALTER TABLE queues ADD COLUMN max_infra_retries int NOT NULL DEFAULT 3
	CHECK (max_infra_retries BETWEEN 0 AND 100);
