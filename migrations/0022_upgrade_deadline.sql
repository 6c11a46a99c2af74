-- 0022: a deadline for RayService zero-downtime upgrades (issue 26).  A job may name its
-- own (spec upgrade_deadline_seconds); otherwise its environment's default applies.  Past
-- it the updater (queue/change/updater.c) rolls back to the serving Ray cluster and the
-- second cluster's quota is released.
ALTER TABLE environments ADD COLUMN upgrade_deadline_seconds int NOT NULL DEFAULT 3600
	CHECK (upgrade_deadline_seconds BETWEEN 60 AND 604800);
