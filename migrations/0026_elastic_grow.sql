-- 0026: elastic growth inside quota (issue 26, "Elastic growth escapes the quota").  When the
-- KubeRay autoscaler raises a worker group's replicas above what fleetd admitted, the status
-- worker records a grow request: a small gang of the extra workers of that group.  The
-- scheduler admits it like a job (same queue, priority, fair share, floors and borrowing),
-- on the job's cluster and in its domain, and charges it to the queue; the status worker
-- then widens the group's hostname pin and lets that many gated pods be scheduled.  A
-- higher-priority job shrinks grown workers before it preempts whole jobs.
--
-- state: pending (waits for the scheduler; reason says why), admitted (charged: placement
-- names its nodes), shrinking (the scheduler took its room back for by_job: the status
-- worker lowers the replicas on the member), released (no longer charged).
CREATE TABLE job_grows (
	id		bigserial PRIMARY KEY,
	job_id		uuid NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
	attempt		int NOT NULL,
	grp		int NOT NULL CHECK (grp > 0),	-- placement group (spec group + 1)
	group_name	text NOT NULL,
	replicas	int NOT NULL CHECK (replicas > 0),	-- replicas this request adds
	pods		int NOT NULL CHECK (pods > 0),		-- replicas x hosts
	desired		int NOT NULL,		-- the autoscaler's replicas when last seen
	state		text NOT NULL DEFAULT 'pending'
			CHECK (state IN ('pending', 'admitted', 'shrinking', 'released')),
	placement	jsonb,			-- {"allocs": [{group, node, pool, pods}]}
	reason		text,			-- pending: the scheduler's reason code
	by_job		text,			-- shrinking: the job that took the room
	requested_at	timestamptz NOT NULL DEFAULT now(),
	admitted_at	timestamptz,
	released_at	timestamptz,
	version		int NOT NULL DEFAULT 1,
	created_at	timestamptz NOT NULL DEFAULT now(),
	updated_at	timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX job_grows_live ON job_grows (job_id) WHERE state <> 'released';
-- at most one waiting request per group of an attempt (the status worker resizes it)
CREATE UNIQUE INDEX job_grows_one_pending ON job_grows (job_id, attempt, grp)
	WHERE state = 'pending';

-- The status worker acts on a grow's admission or shrink: its job is loaded (0021).
CREATE FUNCTION job_grows_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_notify('fleet_status', NEW.job_id::text);
	RETURN NULL;
END $$;
CREATE TRIGGER job_grows_notify AFTER UPDATE OF state ON job_grows FOR EACH ROW
	WHEN (OLD.state IS DISTINCT FROM NEW.state AND NEW.state IN ('admitted', 'shrinking'))
	EXECUTE FUNCTION job_grows_notify();

-- A job that leaves its cluster (preempted, moved, ended, a new attempt) holds no growth:
-- its grows are released in the same transaction as the state change.
CREATE FUNCTION jobs_release_grows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE job_grows SET state = 'released', released_at = now(), updated_at = now(),
		version = version + 1
	 WHERE job_id = NEW.id AND state <> 'released';
	RETURN NULL;
END $$;
CREATE TRIGGER jobs_release_grows AFTER UPDATE OF state, attempt ON jobs FOR EACH ROW
	WHEN ((OLD.state IS DISTINCT FROM NEW.state OR OLD.attempt IS DISTINCT FROM NEW.attempt)
	  AND NOT (NEW.state IN ('dispatched', 'running') AND OLD.attempt = NEW.attempt))
	EXECUTE FUNCTION jobs_release_grows();
