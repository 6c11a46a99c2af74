-- 0020: teams own queues (issue 25).  A queue of no team stays environment-wide; a token
-- (or an OIDC group) may hold its role in one team: it then sees and acts on that team's
-- queues and their jobs only.  submitter: submit to the team's queues, cancel its own jobs.

CREATE TABLE teams (
	name		text PRIMARY KEY,
	environments	text[] NOT NULL,	-- where its queues may live
	description	text NOT NULL DEFAULT '',
	version		int NOT NULL DEFAULT 1,
	created_at	timestamptz NOT NULL DEFAULT now(),
	updated_at	timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE queues ADD COLUMN team text REFERENCES teams (name);
CREATE INDEX queues_team ON queues (team) WHERE team IS NOT NULL;

ALTER TABLE api_tokens ADD COLUMN team text REFERENCES teams (name);
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_role_check;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_role_check
	CHECK (role IN ('viewer', 'submitter', 'operator', 'admin'));
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_team_role
	CHECK (team IS NULL OR role <> 'admin');

ALTER TABLE jobs ADD COLUMN submitted_by text;	-- actor id of the submitter (token or user)

-- GET /v1/jobs of a caller whose role is held in a team: job_page_keys (0007) with the
-- jobs of that team's queues only.  Planned for its values, as the filtered shapes there.
CREATE FUNCTION job_page_keys_team(p_after uuid, p_limit int, p_state text, p_queue text,
	p_env text, p_region text, p_cluster text, p_envs text[], p_team text)
RETURNS TABLE (job_id uuid, job_key text)
LANGUAGE plpgsql STABLE
AS $$
DECLARE
	a uuid := coalesce(p_after, '00000000-0000-0000-0000-000000000000');
BEGIN
	RETURN QUERY EXECUTE
	'SELECT j.id, j.xmin::text || ''/'' || q.xmin::text || ''/'' ||
	        coalesce(k.xmin::text, '''') || ''/'' || coalesce(c.xmin::text, '''')
	   FROM jobs j JOIN queues q ON q.id = j.queue_id
	   LEFT JOIN clusters k ON k.id = j.cluster_id LEFT JOIN clouds c ON c.id = k.cloud_id
	  WHERE j.id > $1 AND q.team = $9
	    AND ($3 IS NULL OR j.state = $3)
	    AND ($4 IS NULL OR q.name = $4 OR q.id::text = $4)
	    AND ($5 IS NULL OR j.environment = $5)
	    AND ($6 IS NULL OR c.region = $6)
	    AND ($7 IS NULL OR k.name = $7 OR k.id::text = $7)
	    AND ($8 IS NULL OR j.environment = ANY ($8))
	  ORDER BY j.id LIMIT $2'
	USING a, p_limit, p_state, p_queue, p_env, p_region, p_cluster, p_envs, p_team;
END
$$;
