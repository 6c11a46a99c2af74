-- 0002: clouds with their scoped IAM pairs, member clusters, capacity snapshots.

CREATE TABLE clouds (
	id		uuid PRIMARY KEY,
	name		text NOT NULL,
	environment	text NOT NULL REFERENCES environments (name) ON UPDATE CASCADE,
	provider	text NOT NULL CHECK (provider IN ('gke', 'aks', 'hyperpod')),
	region		text NOT NULL,
	account		jsonb NOT NULL,		-- project | subscription+tenant+resource_group | account_id
	external_id	text NOT NULL,		-- >= 128 random bits, for sts:ExternalId
	state		text NOT NULL DEFAULT 'pending_iam'
			CHECK (state IN ('pending_iam', 'active')),
	required	jsonb NOT NULL,		-- the policy documents of phase 1
	version		int NOT NULL DEFAULT 1,
	created_at	timestamptz NOT NULL DEFAULT now(),
	updated_at	timestamptz NOT NULL DEFAULT now(),
	UNIQUE (environment, provider, region),
	UNIQUE (environment, name)
);

-- The locked pair of a cloud.  An identity serves one cloud only (unique indexes).
CREATE TABLE iam_pairs (
	cloud_id	uuid PRIMARY KEY REFERENCES clouds (id) ON DELETE CASCADE,
	control_plane_role text NOT NULL UNIQUE,
	cluster_role	text NOT NULL UNIQUE,
	verified_at	timestamptz NOT NULL DEFAULT now(),
	locked		boolean NOT NULL DEFAULT true,
	version		int NOT NULL DEFAULT 1,
	created_at	timestamptz NOT NULL DEFAULT now(),
	updated_at	timestamptz NOT NULL DEFAULT now(),
	CHECK (control_plane_role <> cluster_role)
);
-- One identity may not be the control-plane role of one cloud and the cluster role of another.
CREATE TABLE iam_identities (
	identity	text PRIMARY KEY,
	cloud_id	uuid NOT NULL REFERENCES clouds (id) ON DELETE CASCADE
);

CREATE TABLE clusters (
	id		uuid PRIMARY KEY,
	cloud_id	uuid NOT NULL REFERENCES clouds (id),
	name		text NOT NULL,
	api_server	text NOT NULL,
	ca_cert		text NOT NULL,
	credentials_sealed text NOT NULL,	-- AES-256-GCM under FLEETD_MASTER_KEY, never returned
	provider_cluster_id text NOT NULL,
	labels		jsonb NOT NULL DEFAULT '{}',
	batch_scheduler	text NOT NULL DEFAULT 'none',
	state		text NOT NULL DEFAULT 'ready'
			CHECK (state IN ('ready', 'unreachable')),
	cordoned	boolean NOT NULL DEFAULT false,
	failures	int NOT NULL DEFAULT 0,	-- consecutive failed refreshes
	last_refresh_at	timestamptz,
	last_error	text,
	stockout_timeout_s int NOT NULL DEFAULT 120,
	version		int NOT NULL DEFAULT 1,
	created_at	timestamptz NOT NULL DEFAULT now(),
	updated_at	timestamptz NOT NULL DEFAULT now(),
	UNIQUE (cloud_id, name)
);
CREATE INDEX clusters_cloud ON clusters (cloud_id);

-- One row per cluster x pool x flavor, replaced on every refresh.
CREATE TABLE capacity (
	cluster_id	uuid NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
	pool		text NOT NULL,
	flavor		text NOT NULL,		-- 'cpu' for pools without accelerators
	machine_type	text NOT NULL,
	spot		boolean NOT NULL DEFAULT false,
	price_hour	double precision NOT NULL DEFAULT 0,	-- per node
	accel_per_node	int NOT NULL DEFAULT 0,
	nodes		int NOT NULL DEFAULT 0,		-- current
	max_nodes	int NOT NULL DEFAULT 0,
	autoscaling	boolean NOT NULL DEFAULT false,
	quota_left	int,				-- accelerators the regional quota still allows
	reserved	int NOT NULL DEFAULT 0,		-- provider reservations (accelerators)
	free_accel	int NOT NULL DEFAULT 0,		-- free now, from the member's Kubernetes API
	free_cpu_m	bigint NOT NULL DEFAULT 0,
	free_mem	bigint NOT NULL DEFAULT 0,
	topology	jsonb NOT NULL DEFAULT '{}',	-- {"nodes":[{name, rack, slice, free_accel, free_cpu_m, free_mem, ready}]}
	observed_at	timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (cluster_id, pool, flavor)
);
CREATE INDEX capacity_flavor ON capacity (flavor, observed_at);
