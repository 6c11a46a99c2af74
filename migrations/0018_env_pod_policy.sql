-- 0018: the pod policy of an environment (issue 26): which members of a job's "pod"
-- sections (providers/jobspec_pod.c) its jobs may use.  The default, as
-- jobspec_pod_policy_default() builds it, allows every member and every volume kind the
-- pod section knows; host_path is no kind at all, so no policy can allow it.
ALTER TABLE environments ADD COLUMN pod_policy jsonb NOT NULL DEFAULT
	'{"env": true, "env_from": true, "annotations": true, "labels": true,
	  "tolerations": true, "service_account": true, "containers": true,
	  "volume_kinds": ["persistent_volume_claim", "csi", "secret", "config_map", "empty_dir"],
	  "csi_drivers": ["gcsfuse.csi.storage.gke.io", "fsx.csi.aws.com", "file.csi.azure.com",
	                  "blob.csi.azure.com"]}'::jsonb
	CHECK (jsonb_typeof(pod_policy) = 'object');
