-- 0009: NOTIFY fleet_capacity when what the submit-time admissibility checks read changes
-- (issue 17): a cluster or cloud added, removed or moved between environments, a capacity
-- row added or removed, or one whose flavor, spot, size or racks changed.  fleetd keeps
-- those checks' answers (the largest gang and rack per environment and flavor) in memory
-- and forgets them on this notification, instead of scanning every snapshot's topology on
-- every submit.  A refresh that only changes what is free notifies nothing: a NOTIFY makes
-- the commits of all notifying transactions wait for each other.
CREATE FUNCTION topology_racks(t jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
	SELECT coalesce(jsonb_object_agg(rack, n), '{}') FROM (SELECT x->>'rack' AS rack,
	  count(*) AS n FROM jsonb_array_elements(t->'nodes') x WHERE x->>'rack' IS NOT NULL
	  GROUP BY x->>'rack') r
$$;
CREATE FUNCTION notify_capacity() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_notify('fleet_capacity', '');
	RETURN NULL;
END
$$;
CREATE TRIGGER capacity_notify_rows AFTER INSERT OR DELETE ON capacity
	FOR EACH STATEMENT EXECUTE FUNCTION notify_capacity();
CREATE TRIGGER capacity_notify_change AFTER UPDATE ON capacity FOR EACH ROW
	WHEN (OLD.cluster_id IS DISTINCT FROM NEW.cluster_id OR OLD.flavor IS DISTINCT FROM NEW.flavor
	   OR OLD.spot IS DISTINCT FROM NEW.spot OR OLD.max_nodes IS DISTINCT FROM NEW.max_nodes
	   OR OLD.accel_per_node IS DISTINCT FROM NEW.accel_per_node
	   OR (OLD.topology IS DISTINCT FROM NEW.topology
	       AND topology_racks(OLD.topology) IS DISTINCT FROM topology_racks(NEW.topology)))
	EXECUTE FUNCTION notify_capacity();
CREATE TRIGGER capacity_notify_truncate AFTER TRUNCATE ON capacity
	FOR EACH STATEMENT EXECUTE FUNCTION notify_capacity();
CREATE TRIGGER clusters_notify_rows AFTER INSERT OR DELETE ON clusters
	FOR EACH STATEMENT EXECUTE FUNCTION notify_capacity();
CREATE TRIGGER clusters_notify_change AFTER UPDATE ON clusters FOR EACH ROW
	WHEN (OLD.cloud_id IS DISTINCT FROM NEW.cloud_id) EXECUTE FUNCTION notify_capacity();
CREATE TRIGGER clusters_notify_truncate AFTER TRUNCATE ON clusters
	FOR EACH STATEMENT EXECUTE FUNCTION notify_capacity();
CREATE TRIGGER clouds_notify_rows AFTER INSERT OR DELETE ON clouds
	FOR EACH STATEMENT EXECUTE FUNCTION notify_capacity();
CREATE TRIGGER clouds_notify_change AFTER UPDATE ON clouds FOR EACH ROW
	WHEN (OLD.environment IS DISTINCT FROM NEW.environment) EXECUTE FUNCTION notify_capacity();
CREATE TRIGGER clouds_notify_truncate AFTER TRUNCATE ON clouds
	FOR EACH STATEMENT EXECUTE FUNCTION notify_capacity();
