-- 0023: an environment's KubeRay History Server (issue 24): the log storage its Ray pods'
-- collector writes to and where the History Server is reached.  NULL: none.  The canonical
-- object providers/kuberay_history.c validates: {"storage": "gs://…" | "s3://…" |
-- "https://ACCOUNT.blob.core.windows.net/CONTAINER…", "collector_image", "url"?,
-- "s3_region"?}.  No credential is kept: pods reach the bucket by workload identity.
ALTER TABLE environments ADD COLUMN history_server jsonb
	CHECK (history_server IS NULL OR (jsonb_typeof(history_server) = 'object'
	       AND history_server ? 'storage' AND history_server ? 'collector_image'));
