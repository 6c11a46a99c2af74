-- 0024: each job's Ray auth token (issue 25: Ray clusters closed to other tenants).
-- Random, made when the job is first dispatched, applied to the member as the Secret the
-- Ray object's spec.authOptions names, and handed out by GET /v1/jobs/{id}/dashboard.
-- Stored only sealed with the master key (AES-256-GCM, base64(iv || ciphertext || tag),
-- additional data "ray-auth:<job id>"), as cluster credentials are; never in plaintext.

CREATE TABLE job_ray_auth (
	job_id		uuid PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
	sealed		text NOT NULL,
	created_at	timestamptz NOT NULL DEFAULT now()
);

-- An environment may ask for an ingress in front of its jobs' Ray dashboards (KubeRay
-- headGroupSpec.enableIngress + ingressOptions), always behind the token:
-- {host, path, path_type, tls_secret, controller_namespace}; NULL = none.
ALTER TABLE environments ADD COLUMN dashboard_ingress jsonb
	CHECK (dashboard_ingress IS NULL OR jsonb_typeof(dashboard_ingress) = 'object');
