-- 0003: queues, priority classes, jobs with their placements, events and reservations.

CREATE TABLE priority_classes (
	id		uuid PRIMARY KEY,
	name		text NOT NULL UNIQUE,
	value		int NOT NULL,
	preempt		boolean NOT NULL DEFAULT false,	-- may evict lower priorities
	description	text NOT NULL DEFAULT '',
	version		int NOT NULL DEFAULT 1,
	created_at	timestamptz NOT NULL DEFAULT now(),
	updated_at	timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE queues (
	id		uuid PRIMARY KEY,
	name		text NOT NULL,
	environment	text NOT NULL REFERENCES environments (name) ON UPDATE CASCADE,
	cohort		text,
	weight		double precision NOT NULL DEFAULT 1 CHECK (weight > 0),
	nominal_quota	jsonb NOT NULL DEFAULT '{}',	-- {flavor: accelerators}
	borrowing_limit	jsonb NOT NULL DEFAULT '{}',
	lending_limit	jsonb NOT NULL DEFAULT '{}',
	default_priority_class text,
	queueing_strategy text NOT NULL DEFAULT 'best_effort_fifo'
			CHECK (queueing_strategy IN ('best_effort_fifo', 'strict_fifo')),
	version		int NOT NULL DEFAULT 1,
	created_at	timestamptz NOT NULL DEFAULT now(),
	updated_at	timestamptz NOT NULL DEFAULT now(),
	UNIQUE (environment, name)
);

CREATE TABLE jobs (
	id		uuid PRIMARY KEY,
	name		text NOT NULL,
	environment	text NOT NULL REFERENCES environments (name) ON UPDATE CASCADE,
	queue_id	uuid NOT NULL REFERENCES queues (id),
	kind		text NOT NULL,
	priority_class	text NOT NULL,
	priority	int NOT NULL,
	spec		jsonb NOT NULL,
	state		text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'admitted',
			'dispatched', 'running', 'succeeded', 'failed', 'cancelled', 'preempted',
			'moving')),
	reason		text,
	enqueued_at	timestamptz NOT NULL DEFAULT now(),	-- kept across preemption and moves
	attempt		int NOT NULL DEFAULT 0,
	cluster_id	uuid REFERENCES clusters (id),
	placement	jsonb,		-- {cluster, pool, flavor, rack, nodes, accel, cpu_m, mem, price}
	object_name	text,
	object_uid	text,
	object_rv	text,
	manifest	jsonb,		-- exactly what was applied
	claimed_by	text,
	claimed_at	timestamptz,
	next_try_at	timestamptz NOT NULL DEFAULT now(),
	tries		int NOT NULL DEFAULT 0,
	dispatched_at	timestamptz,
	started_at	timestamptz,
	finished_at	timestamptz,
	cancel_requested boolean NOT NULL DEFAULT false,
	checkpoint_deadline timestamptz,
	version		int NOT NULL DEFAULT 1,
	created_at	timestamptz NOT NULL DEFAULT now(),
	updated_at	timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX jobs_state ON jobs (environment, state, priority DESC, enqueued_at);
CREATE INDEX jobs_queue ON jobs (queue_id, state);
CREATE INDEX jobs_cluster ON jobs (cluster_id, state);

CREATE TABLE placements (
	id		bigserial PRIMARY KEY,
	job_id		uuid NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
	attempt		int NOT NULL,
	decided_at	timestamptz NOT NULL DEFAULT now(),
	decided_by	text NOT NULL,
	cluster_id	uuid,
	decision	jsonb NOT NULL,		-- chosen candidate
	candidates	jsonb NOT NULL		-- every cluster, score or reason
);
CREATE INDEX placements_job ON placements (job_id, id);

CREATE TABLE job_events (
	id		bigserial PRIMARY KEY,
	job_id		uuid NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
	at		timestamptz NOT NULL DEFAULT now(),
	type		text NOT NULL,		-- state change or observed event
	from_state	text,
	to_state	text,
	attempt		int NOT NULL DEFAULT 0,
	message		text NOT NULL DEFAULT '',
	data		jsonb
);
CREATE INDEX job_events_job ON job_events (job_id, id);

-- Decaying stockout penalties per cluster x flavor.
CREATE TABLE stockouts (
	cluster_id	uuid NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
	flavor		text NOT NULL,
	at		timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (cluster_id, flavor)
);

-- Long-running operations (drains).
CREATE TABLE operations (
	id		uuid PRIMARY KEY,
	kind		text NOT NULL,
	environment	text NOT NULL,
	target		jsonb NOT NULL,
	state		text NOT NULL DEFAULT 'running'
			CHECK (state IN ('running', 'succeeded', 'failed', 'cancelled')),
	total		int NOT NULL DEFAULT 0,
	moved		int NOT NULL DEFAULT 0,
	waiting		int NOT NULL DEFAULT 0,
	failed		int NOT NULL DEFAULT 0,
	failures	jsonb NOT NULL DEFAULT '[]',
	version		int NOT NULL DEFAULT 1,
	created_at	timestamptz NOT NULL DEFAULT now(),
	updated_at	timestamptz NOT NULL DEFAULT now()
);
