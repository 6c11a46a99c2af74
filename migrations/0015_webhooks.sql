-- Webhooks for portals (issue 27): endpoints per environment, and their outbox.
-- The fan-out copies each matching job_events row (by seq, after the endpoint's cursor)
-- into webhook_deliveries with the payload already built, and moves the cursor, in one
-- transaction; senders claim due rows (FOR UPDATE SKIP LOCKED), send with no transaction
-- open, and record the outcome in a new one.  Secrets are sealed with the master key
-- (AES-256-GCM, the endpoint's id as associated data), never stored in clear.
CREATE TABLE webhooks (
	id		uuid PRIMARY KEY,
	environment	text NOT NULL REFERENCES environments (name) ON UPDATE CASCADE,
	team		text,			-- only jobs of this team (spec.labels.team)
	url		text NOT NULL,
	types		text[] NOT NULL,	-- webhook event types, or {*}
	description	text NOT NULL DEFAULT '',
	secret_sealed	text NOT NULL,
	prev_secret_sealed text,		-- the rotated-out secret, still signing ...
	prev_secret_until timestamptz,		-- ... until then
	cursor		bigint NOT NULL,	-- last job_events.seq fanned out
	version		int NOT NULL DEFAULT 1,
	created_at	timestamptz NOT NULL DEFAULT now(),
	updated_at	timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhooks_environment ON webhooks (environment, id);

-- The webhook event type of a job event: what endpoints subscribe to.
CREATE FUNCTION webhook_event_type(etype text, to_state text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE
	  WHEN etype = 'state' AND to_state = 'failed' THEN 'job.failed'
	  WHEN etype = 'state' THEN 'job.state_changed'
	  WHEN etype = 'submitted' THEN 'job.submitted'
	  WHEN etype IN ('move', 'moved', 'withdrawn', 'fenced', 'cancel_requested',
	    'spec_update_requested', 'orphan_deleted') THEN 'job.operation'
	  ELSE 'job.event' END
$$;

CREATE TABLE webhook_deliveries (
	id		bigserial PRIMARY KEY,
	webhook_id	uuid NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
	seq		bigint NOT NULL,	-- the event (payload id)
	job_id		uuid NOT NULL,
	type		text NOT NULL,
	payload		text NOT NULL,		-- the exact body, the same on every attempt
	state		text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending',
			'delivered', 'dead')),
	attempts	int NOT NULL DEFAULT 0,
	next_at		timestamptz NOT NULL DEFAULT now(),	-- due; while sending: lease end
	last_status	int,			-- HTTP status of the last attempt (null: none)
	last_error	text,
	created_at	timestamptz NOT NULL DEFAULT now(),
	updated_at	timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_order ON webhook_deliveries (webhook_id, job_id, seq, id)
	WHERE state = 'pending';
CREATE INDEX webhook_deliveries_list ON webhook_deliveries (webhook_id, state, id);
