-- 0021: the status worker's work follows change (issue 29, item 2).  A change to a job
-- that the worker acts on — its state, a cancel request, a checkpoint deadline, its
-- cluster, attempt or object — NOTIFYs fleet_status with the job's id, so that the worker
-- loads that one job instead of every followed job each second (queue/follow/status.c).
-- Only jobs the worker follows notify (placed on a cluster, in a followed state): the
-- scheduler's admissions notify nothing.  A NOTIFY makes the commits of notifying
-- transactions wait for each other; the states it fires on change at the pace of
-- dispatch and of the members, not of submissions.
CREATE FUNCTION jobs_status_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_notify('fleet_status', NEW.id::text);
	RETURN NULL;
END $$;
CREATE TRIGGER jobs_status_notify AFTER UPDATE ON jobs FOR EACH ROW
	WHEN (NEW.cluster_id IS NOT NULL
	  AND NEW.state IN ('dispatched', 'running', 'preempted', 'succeeded', 'failed', 'cancelled')
	  AND (OLD.state IS DISTINCT FROM NEW.state
	    OR OLD.cancel_requested IS DISTINCT FROM NEW.cancel_requested
	    OR OLD.checkpoint_deadline IS DISTINCT FROM NEW.checkpoint_deadline
	    OR OLD.cluster_id IS DISTINCT FROM NEW.cluster_id
	    OR OLD.attempt IS DISTINCT FROM NEW.attempt
	    OR OLD.object_uid IS DISTINCT FROM NEW.object_uid))
	EXECUTE FUNCTION jobs_status_notify();

-- The jobs the worker follows, by cluster: its spread checks read a slice of the clusters
-- each second, and a finished job stays followed only until its object is deleted, so the
-- history of finished jobs is not scanned.
CREATE INDEX jobs_followed ON jobs (cluster_id)
	WHERE state IN ('dispatched', 'running', 'preempted')
	   OR (state IN ('succeeded', 'failed', 'cancelled') AND object_uid IS NOT NULL);
