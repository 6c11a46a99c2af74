-- 0013: what a member cluster's batch scheduler allows (issue 13). kueue: the operator's
-- registration {elastic_jobs, cluster_queue, local_queue_prefix} (NULL unless
-- batch_scheduler = 'kueue'); batch_probe: what fleetd last read on the member
-- {checked_at, condition: verified|mismatch|unverified, kueue_api, elastic_jobs,
-- ray_integration, cluster_queue_exists, message}; batch_probe_at paces the poller's probe.
ALTER TABLE clusters ADD COLUMN kueue jsonb;
ALTER TABLE clusters ADD COLUMN batch_probe jsonb;
ALTER TABLE clusters ADD COLUMN batch_probe_at timestamptz;
