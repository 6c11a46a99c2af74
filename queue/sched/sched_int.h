/* sched_int: the model's private layout, shared by the sched_*.c files only. */
#ifndef FLEET_QUEUE_SCHED_INT_H
#define FLEET_QUEUE_SCHED_INT_H

#include "queue/sched/sched.h"

struct sched_map {
	const char	**keys;
	int		 *vals;
	size_t		  cap, n;
};

struct sched_pair {
	int64_t		 key;
	int		 idx;
};

struct sched_model {
	struct sched_config	  cfg;
	int64_t			  now;
	struct arena		 *arena;
	struct sched_map	  names;	/* interned strings -> id */
	const char		**name_of;
	size_t			  n_names, cap_names;
	struct sched_map	  cluster_ids, queue_ids;
	/* Jobs by id: open addressing over job indices (-1 empty), the key being the job's
	 * own id, so a slot takes 4 bytes instead of a key pointer and a value (12). */
	int			 *job_slots;
	size_t			  job_cap;
	struct sched_strblock	 *strs;		/* job ids, packed (no 16-byte alignment) */
	int			  flavor_name[SCHED_MAX_FLAVORS];
	int			  n_flavors;
	int			  ctype_only;	/* SCHED_CT_ANY, or the one capacity type
						 * sched_place_pref tries now */
	int			  cpu_flavor;	/* "cpu" (heads, cpu-only workers): on-demand pools
						 * only, whatever the job's spot and price; -1 none */
	struct sched_cluster	**clusters;
	size_t			  n_clusters, cap_clusters;
	struct sched_queue	**queues;
	size_t			  n_queues, cap_queues;
	struct sched_job	**jobs;
	size_t			  n_jobs, cap_jobs;
	struct sched_cohort	 *cohorts;
	size_t			  n_cohorts;
	int			 *by_flavor[SCHED_MAX_FLAVORS];	/* cluster indices */
	size_t			  n_by_flavor[SCHED_MAX_FLAVORS];
	/* scratch for packing, sized to the largest cluster plus growth */
	struct sched_vec	 *s_free;
	unsigned char		 *s_used;
	struct sched_pair	 *s_order;
	int			 *s_pool;
	size_t			  s_cap;
	struct sched_alloc	 *a_scratch;	/* allocs of the last pack */
	size_t			  a_cap;
	void			 *c_scratch;	/* per-candidate working rows */
	size_t			  c_cap;
	struct arena		 *place_tmp;	/* cfg.lean_pending: where a cycle tries its
						 * placements; an admission copies its own out */
	struct sched_group	  g_scratch[SCHED_MAX_GROUPS];	/* sched_job_build_groups */
	struct sched_flavor_req	  r_scratch[SCHED_MAX_GROUPS];
	struct sched_job	**g_shared;	/* open addressing: a job of each shape shared */
	size_t			  g_cap, g_n;
	uint16_t		  counts_scratch[SCHED_NREASONS];	/* sched_place without
							 * an arena */
	size_t			 *env_clusters;	/* clusters per interned environment */
	size_t			  n_env;
	bool			  finalized;
};

/* A block of the model's string pool: strings copied end to end. */
struct sched_strblock {
	struct sched_strblock	*next;
	size_t			 size, used;
	char			 data[];
};

int	 sched_map_get(const struct sched_map *mp, const char *k);
/* Moves j's groups and req into the model's scratch, where the caller rewrites them (an
 * admission's counts) before sched_job_keep_groups stores them, shared with every job of
 * equal groups: an admitted job no longer needs a copy of its own (160 bytes each at 20,000
 * admissions). */
void	 sched_job_scratch_groups(struct sched_model *m, struct sched_job *j);
/* The index of the job with id k, -1 when none. */
int	 sched_job_index(const struct sched_model *m, const char *k);

void	*sched_grow(void *p, size_t *cap, size_t need, size_t size);
void	 sched_pool_refresh(struct sched_pool *p, const struct sched_cluster *c, int pool);
void	 sched_queue_refresh(struct sched_model *m, struct sched_queue *q);
bool	 sched_vec_fits(const struct sched_vec *free, const struct sched_vec *need);
int64_t	 sched_vec_count(const struct sched_vec *free, const struct sched_vec *pod);
bool	 sched_pool_matches(const struct sched_model *m, const struct sched_job *j,
	    const struct sched_pool *p, int flavor);
void	 sched_scratch_ensure(struct sched_model *m, size_t n);
void	 sched_capacity_take(struct sched_model *m, struct sched_cluster *c,
	    struct sched_alloc *allocs, size_t n);
void	 sched_capacity_give(struct sched_model *m, struct sched_cluster *c,
	    const struct sched_alloc *allocs, size_t n);
int	 sched_group_pods(const struct sched_job *j, int g);
int	 sched_pair_cmp(const void *a, const void *b);
/* The order victims are taken in (sched_preempt.c): lowest priority first, then newest
 * admitted, then model index. */
int	 sched_victim_cmp(const struct sched_job *x, const struct sched_job *y);
enum sched_reason sched_pack_scratch(struct sched_model *m, const struct sched_job *j,
	    const struct sched_cluster *c, size_t *n_allocs);
/* Price per accelerator-hour of p (per node-hour when its nodes have none). */
double	 sched_pool_accel_price(const struct sched_pool *p);
bool	 sched_reclaims(const struct sched_model *m, const struct sched_job *j);
bool	 sched_pool_open(const struct sched_model *m, const struct sched_job *j,
	    const struct sched_pool *p);
enum sched_reason sched_quick_fit(const struct sched_model *m, const struct sched_job *j,
	    const struct sched_cluster *c);

/* Grow requests (sched_grow.c): whether node i of c is in grow j's domain (true for a job
 * that is not a grow). */
bool	 sched_grow_node_ok(const struct sched_job *j, const struct sched_cluster *c, size_t i);

/* Topology pack (sched_blocks.c): a set of racks of one scale unit to try. */
#define SCHED_MAX_RACKS	64	/* racks one pack job may span */
struct sched_rackset {
	int	racks[SCHED_MAX_RACKS];
	int	n;
	int	block;		/* interned scale unit, -1 none */
};
/* The rack sets j may pack into on c, best first, at most max: in each scale unit the
 * fewest racks whose free room holds the gang, then the fewest racks already used by
 * another gang (a gang of more than one rack), then the least room left over. */
size_t	 sched_blocks_choose(const struct sched_model *m, const struct sched_job *j,
	    const struct sched_cluster *c, struct sched_rackset *out, size_t max);
/* The largest scale unit of c for j's accelerator gang, counted at allocatable (what it
 * could ever hold): its accelerators over the racked nodes of the gang's pools (0: no node of
 * them carries a rack); *block its interned name (-1: the racks without a block label),
 * *racks how many racks it has.  *need: the gang's accelerators. */
int64_t	 sched_blocks_largest(const struct sched_model *m, const struct sched_job *j,
	    const struct sched_cluster *c, int *block, int *racks, int64_t *need);

#endif
