-- 0001: environments, API tokens, the audit log and idempotency keys.

CREATE TABLE environments (
	id		uuid PRIMARY KEY,
	name		text NOT NULL UNIQUE CHECK (name ~ '^[a-z][a-z0-9-]{1,30}$'),
	description	text NOT NULL DEFAULT '',
	version		int NOT NULL DEFAULT 1,
	created_at	timestamptz NOT NULL DEFAULT now(),
	updated_at	timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_tokens (
	id		uuid PRIMARY KEY,
	name		text NOT NULL,
	role		text NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
	environments	text[] NOT NULL,	-- '{*}' = every environment
	secret_sha256	text NOT NULL UNIQUE,	-- hex sha-256 of the secret; the secret is never stored
	revoked_at	timestamptz,
	last_used_at	timestamptz,
	version		int NOT NULL DEFAULT 1,
	created_at	timestamptz NOT NULL DEFAULT now(),
	updated_at	timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE audit_log (
	id		bigserial PRIMARY KEY,
	at		timestamptz NOT NULL DEFAULT now(),
	actor_id	uuid,
	actor_name	text NOT NULL,
	action		text NOT NULL,
	resource_type	text NOT NULL,
	resource_id	text NOT NULL,
	environment	text,
	before		jsonb,
	after		jsonb,
	request_id	text
);
CREATE INDEX audit_log_resource ON audit_log (resource_type, resource_id, id);
CREATE INDEX audit_log_actor ON audit_log (actor_id, id);

-- The first answer to a POST with an Idempotency-Key, kept for 24 hours.
CREATE TABLE idempotency_keys (
	token_id	uuid NOT NULL,
	key		text NOT NULL,
	method		text NOT NULL,
	path		text NOT NULL,
	body_sha256	text NOT NULL,
	status		int NOT NULL,
	response	text NOT NULL,
	location	text,
	created_at	timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (token_id, key)
);
