-- 0006: evacuation from an unreachable source, checkpoint acknowledgements, orphans.

-- Since when the cluster fails its health checks (capacity refreshes); NULL when healthy.
ALTER TABLE clusters ADD COLUMN failing_since timestamptz;

-- The last checkpoint the job acknowledged: {"uri", "at", "requested_at", "attempt"}.
ALTER TABLE jobs ADD COLUMN checkpoint jsonb;

-- Objects on member clusters that belong to no live attempt: recorded when a source is
-- fenced (abandoned) or when the orphan sweep finds one; resolved when deleted or gone.
CREATE TABLE orphans (
	id		bigserial PRIMARY KEY,
	cluster_id	uuid NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
	job_id		uuid,
	attempt		int,
	kind		text NOT NULL,
	namespace	text NOT NULL,
	name		text NOT NULL,
	reason		text NOT NULL,	-- abandoned, moved, cancelled, finished, old_attempt, ...
	state		text NOT NULL DEFAULT 'pending'
			CHECK (state IN ('pending', 'reported', 'deleted', 'gone')),
	found_at	timestamptz NOT NULL DEFAULT now(),
	resolved_at	timestamptz,
	UNIQUE (cluster_id, kind, namespace, name)
);
CREATE INDEX orphans_open ON orphans (cluster_id) WHERE state IN ('pending', 'reported');

-- Why a job of an operation waits, in a word (no_capacity, quota, cordoned_target,
-- source_unreachable, ...); reason keeps the sentence.
ALTER TABLE operation_jobs ADD COLUMN reason_code text;
