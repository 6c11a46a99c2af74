-- 0007: one page of GET /v1/jobs as ids and row-version keys (issue 17).
-- The API keeps the text of listed jobs in memory keyed by the xmin of the job row and of
-- its queue, cluster and cloud rows; it asks here only for the ids and keys of a page, then
-- for the rows whose key it does not hold.  A function, so that the common shapes (no
-- filter, a state, a queue) run with plans made once per connection: sent as prepared
-- statements, these joins are planned again on every call (the LIMIT and the optional
-- filters are parameters), which costs more than running them.  Other filters run as
-- dynamic SQL, planned for their values.
CREATE FUNCTION job_page_keys(p_after uuid, p_limit int, p_state text, p_queue text,
	p_env text, p_region text, p_cluster text, p_envs text[])
RETURNS TABLE (job_id uuid, job_key text)
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
	a uuid := coalesce(p_after, '00000000-0000-0000-0000-000000000000');
BEGIN
	IF p_env IS NOT NULL OR p_region IS NOT NULL OR p_cluster IS NOT NULL OR
	   (p_state IS NOT NULL AND p_queue IS NOT NULL) THEN
		RETURN QUERY EXECUTE
		'SELECT j.id, j.xmin::text || ''/'' || q.xmin::text || ''/'' ||
		        coalesce(k.xmin::text, '''') || ''/'' || coalesce(c.xmin::text, '''')
		   FROM jobs j JOIN queues q ON q.id = j.queue_id
		   LEFT JOIN clusters k ON k.id = j.cluster_id LEFT JOIN clouds c ON c.id = k.cloud_id
		  WHERE j.id > $1
		    AND ($3 IS NULL OR j.state = $3)
		    AND ($4 IS NULL OR q.name = $4 OR q.id::text = $4)
		    AND ($5 IS NULL OR j.environment = $5)
		    AND ($6 IS NULL OR c.region = $6)
		    AND ($7 IS NULL OR k.name = $7 OR k.id::text = $7)
		    AND ($8 IS NULL OR j.environment = ANY ($8))
		  ORDER BY j.id LIMIT $2'
		USING a, p_limit, p_state, p_queue, p_env, p_region, p_cluster, p_envs;
	ELSIF p_state IS NOT NULL THEN
		RETURN QUERY
		SELECT j.id, j.xmin::text || '/' || q.xmin::text || '/' ||
		       coalesce(k.xmin::text, '') || '/' || coalesce(c.xmin::text, '')
		  FROM jobs j JOIN queues q ON q.id = j.queue_id
		  LEFT JOIN clusters k ON k.id = j.cluster_id LEFT JOIN clouds c ON c.id = k.cloud_id
		 WHERE j.id > a AND j.state = p_state
		   AND (p_envs IS NULL OR j.environment = ANY (p_envs))
		 ORDER BY j.id LIMIT p_limit;
	ELSIF p_queue IS NOT NULL THEN
		RETURN QUERY
		SELECT j.id, j.xmin::text || '/' || q.xmin::text || '/' ||
		       coalesce(k.xmin::text, '') || '/' || coalesce(c.xmin::text, '')
		  FROM jobs j JOIN queues q ON q.id = j.queue_id
		  LEFT JOIN clusters k ON k.id = j.cluster_id LEFT JOIN clouds c ON c.id = k.cloud_id
		 WHERE j.id > a AND j.queue_id = ANY (ARRAY(SELECT qq.id FROM queues qq
		                                          WHERE qq.name = p_queue OR qq.id::text = p_queue))
		   AND (p_envs IS NULL OR j.environment = ANY (p_envs))
		 ORDER BY j.id LIMIT p_limit;
	ELSE
		RETURN QUERY
		SELECT j.id, j.xmin::text || '/' || q.xmin::text || '/' ||
		       coalesce(k.xmin::text, '') || '/' || coalesce(c.xmin::text, '')
		  FROM jobs j JOIN queues q ON q.id = j.queue_id
		  LEFT JOIN clusters k ON k.id = j.cluster_id LEFT JOIN clouds c ON c.id = k.cloud_id
		 WHERE j.id > a AND (p_envs IS NULL OR j.environment = ANY (p_envs))
		 ORDER BY j.id LIMIT p_limit;
	END IF;
END
$$;
