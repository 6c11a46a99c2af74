-- 0011: a running job's spec update (PUT /v1/jobs/{id}/spec, issue 13): the update in
-- flight, for the updater worker. {generation, phase: pending|upgrading|done|failed,
-- fields, upgrade (RayService: a new Ray cluster, so the old spec is held too),
-- old_spec, next_at}. NULL: never updated.
ALTER TABLE jobs ADD COLUMN spec_update jsonb;
CREATE INDEX jobs_spec_update_open ON jobs ((spec_update->>'phase'))
 WHERE spec_update->>'phase' IN ('pending', 'upgrading');
