-- 0005: one fleet cluster per provider cluster (AKS resource ids are case-insensitive).
CREATE UNIQUE INDEX clusters_provider_cluster_id_key ON clusters (lower(provider_cluster_id));
