-- 0027: GET /v1/jobs?state= and ?queue= read their page from an index in id order (issue 29,
-- item 6).  job_page_keys (0007) walked jobs_pkey from the cursor and dropped the rows of
-- other states or queues: a page of running jobs (10 % of them) read about 240 heap rows, a
-- page of one queue of 30 about 560, each on a page of its own (ids are random).  With
-- (state, id) and (queue_id, id) a page reads its 21 rows.  A queue name may name one queue
-- per environment: the page of each is read in id order from the index, at most p_limit
-- rows each, and the smallest ids of them all kept.
CREATE INDEX jobs_state_id ON jobs (state, id);
CREATE INDEX jobs_queue_id ON jobs (queue_id, id);

CREATE OR REPLACE FUNCTION job_page_keys(p_after uuid, p_limit int, p_state text, p_queue text,
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
		 WHERE j.state = p_state AND j.id > a
		   AND (p_envs IS NULL OR j.environment = ANY (p_envs))
		 ORDER BY j.id LIMIT p_limit;
	ELSIF p_queue IS NOT NULL THEN
		-- cluster and cloud by key lookups of the page's rows only (joined, the generic
		-- plan hashed every cluster for each page)
		RETURN QUERY
		SELECT j.id, j.jx::text || '/' || q.xmin::text || '/' ||
		       coalesce((SELECT k.xmin::text || '/' || coalesce(c.xmin::text, '')
		                   FROM clusters k LEFT JOIN clouds c ON c.id = k.cloud_id
		                  WHERE k.id = j.cluster_id), '/')
		  FROM queues q
		  CROSS JOIN LATERAL (SELECT jj.id, jj.xmin AS jx, jj.cluster_id FROM jobs jj
		                       WHERE jj.queue_id = q.id AND jj.id > a
		                         AND (p_envs IS NULL OR jj.environment = ANY (p_envs))
		                       ORDER BY jj.id LIMIT p_limit) j
		 WHERE q.name = p_queue OR q.id::text = p_queue
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
