-- 0014: member clusters shared among live replicas (issue 29, regions/lease.c).  replicas:
-- one row per replica that runs per-cluster work, its heartbeat in seen_at.  cluster_leases:
-- who holds each cluster until when; epoch grows with every take, and a write about a
-- cluster checks (holder, epoch, expires_at) in its own transaction.  A new cluster
-- NOTIFYs fleet_leases so a replica takes it at once rather than at its next turn.
CREATE TABLE replicas (
	instance_id	text PRIMARY KEY,
	seen_at		timestamptz NOT NULL,
	started_at	timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE cluster_leases (
	cluster_id	uuid PRIMARY KEY REFERENCES clusters (id) ON DELETE CASCADE,
	holder		text,
	epoch		bigint NOT NULL DEFAULT 0,
	expires_at	timestamptz NOT NULL DEFAULT '-infinity'
);
CREATE INDEX cluster_leases_holder ON cluster_leases (holder);

CREATE FUNCTION cluster_leases_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_notify('fleet_leases', '');
	RETURN NULL;
END $$;
CREATE TRIGGER clusters_notify_leases AFTER INSERT ON clusters
	FOR EACH STATEMENT EXECUTE FUNCTION cluster_leases_notify();
