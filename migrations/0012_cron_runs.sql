-- 0012: the runs (child RayJobs) of a RayCronJob that fleetd counts against quota and
-- capacity while they run (issue 13; queue/cron.c writes it, queue/loader.c reads it).
-- An array of {name, uid, scheduled_at, started_at}; NULL or [] when nothing runs.
ALTER TABLE jobs ADD COLUMN cron_runs jsonb;
