-- 0008: continuous IAM verification — a cloud whose pair drifted is `degraded` (no new
-- placements) with the checks that failed, until a later verification passes.
ALTER TABLE clouds DROP CONSTRAINT clouds_state_check;
ALTER TABLE clouds ADD CONSTRAINT clouds_state_check
	CHECK (state IN ('pending_iam', 'active', 'degraded'));
ALTER TABLE clouds ADD COLUMN iam_checked_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE clouds ADD COLUMN iam_failed_checks jsonb NOT NULL DEFAULT '[]';
CREATE INDEX clouds_iam_due ON clouds (iam_checked_at) WHERE state IN ('active', 'degraded');
