-- 0025: capacity preferences (issue 27).  Each pool says what capacity type it sells; a
-- queue may rank capacity types for its jobs (a job's constraints.capacity_preference
-- overrides it); the scheduler migrates a running job to a more preferred type when one
-- frees, and counts those migrations per job.

ALTER TABLE capacity ADD COLUMN capacity_type text NOT NULL DEFAULT 'on_demand'
	CHECK (capacity_type IN ('reservation', 'on_demand', 'spot', 'flex_start'));
UPDATE capacity SET capacity_type = 'spot' WHERE spot;

-- {"order": [...], "first_choice_only", "max_migrations", "min_run_seconds",
--  "cooldown_seconds"}; NULL: no preference (any type, never migrated)
ALTER TABLE queues ADD COLUMN capacity_preference jsonb;

ALTER TABLE jobs ADD COLUMN capacity_migrations int NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN migrated_at timestamptz;	-- the last capacity migration
