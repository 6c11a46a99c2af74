-- 0004: moves between regions and the drains that issue them.

-- A move in progress: {"operation", "reason", "from": {cluster_id, object_name, attempt,
-- kind}, "to": <placement>, "phase": reserved|checkpointing|suspended|applied|ready,
-- "requested_by", "started_at"}.  NULL when no move is in progress.
ALTER TABLE jobs ADD COLUMN move jsonb;
ALTER TABLE jobs ADD COLUMN hold_cluster uuid;	-- cluster held for a starving head
CREATE INDEX jobs_moving ON jobs (state) WHERE state = 'moving';

-- Which jobs an operation covers and how each ended.
CREATE TABLE operation_jobs (
	operation_id	uuid NOT NULL REFERENCES operations (id) ON DELETE CASCADE,
	job_id		uuid NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
	state		text NOT NULL DEFAULT 'waiting'
			CHECK (state IN ('waiting', 'moving', 'moved', 'failed', 'cancelled')),
	reason		text,
	updated_at	timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (operation_id, job_id)
);
ALTER TABLE operations ADD COLUMN created_by text;
ALTER TABLE operations ADD COLUMN cancel_requested boolean NOT NULL DEFAULT false;
