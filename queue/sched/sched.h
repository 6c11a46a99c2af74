/* sched: the scheduler's pure decision logic (fair share, placement, preemption,
 * one cycle, explain) over an in-memory model that the caller fills from rows. */
#ifndef FLEET_QUEUE_SCHED_H
#define FLEET_QUEUE_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/arena.h"
#include "core/err.h"

#define SCHED_MAX_FLAVORS	64	/* distinct flavors in one model */
#define SCHED_MAX_GROUPS	8	/* worker groups (head included) per job */
#define SCHED_MAX_CHOICES	16	/* regions or providers a job may list */
#define SCHED_UNSET		(-1)	/* quota: unmanaged resource, or no limit */

enum sched_resource {
	SCHED_ACCEL,		/* accelerators, count */
	SCHED_CPU,		/* millicores */
	SCHED_MEM,		/* MiB */
	SCHED_NRES
};

struct sched_vec {
	int64_t	v[SCHED_NRES];
};

/* The accelerator gang's topology: none; one node (host); one rack / NVLink domain (rack);
 * whole TPU slices (slice); the fewest racks of one scale unit / InfiniBand block (pack). */
enum sched_topo { SCHED_TOPO_NONE, SCHED_TOPO_HOST, SCHED_TOPO_RACK, SCHED_TOPO_SLICE,
    SCHED_TOPO_PACK };
enum sched_strategy { SCHED_BEST_EFFORT_FIFO, SCHED_STRICT_FIFO };
enum sched_spot { SCHED_SPOT_ANY, SCHED_SPOT_ONLY, SCHED_SPOT_NEVER };
/* Capacity types a pool sells (capacity.capacity_type), ranked per queue or job. */
enum sched_ctype {
	SCHED_CT_RESERVATION,	/* GCE reservation, AWS capacity block, Azure capacity reservation */
	SCHED_CT_ON_DEMAND,
	SCHED_CT_SPOT,
	SCHED_CT_FLEX_START,	/* GKE queued provisioning (DWS flex-start, ProvisioningRequest) */
	SCHED_NCTYPES
};
#define SCHED_CT_ANY	(-1)	/* sched_model's ctype_only: no restriction */

const char	*sched_ctype_name(enum sched_ctype t);
/* -1 when s names no capacity type. */
int		 sched_ctype_parse(const char *s);
enum sched_state {
	SCHED_PENDING,
	SCHED_ADMITTED,		/* holds quota; capacity in flight unless the snapshot shows it */
	SCHED_RUNNING,		/* holds quota; capacity already in the snapshot */
	SCHED_PREEMPTED,	/* chosen as a victim this cycle; the caller requeues it */
	SCHED_FINISHED
};

/* Why a cluster was not chosen (or a job not admitted).  Codes are stable API. */
enum sched_reason {
	SCHED_R_CHOSEN = 0,
	SCHED_R_OUTSCORED,		/* fitted, another cluster scored better */
	SCHED_R_NOT_READY,
	SCHED_R_UNREACHABLE,		/* cloud not active or API unreachable */
	SCHED_R_STALE,
	SCHED_R_CORDONED,
	SCHED_R_WRONG_FLAVOR,
	SCHED_R_REGION_NOT_ALLOWED,
	SCHED_R_PROVIDER_NOT_ALLOWED,
	SCHED_R_SPOT_MISMATCH,
	SCHED_R_CAPACITY_TYPE,		/* no pool of a capacity type the job ranks (or of its
					 * first choice, when it takes only that) */
	SCHED_R_NO_HEAD_POOL,		/* no on-demand cpu pool whose node holds the head */
	SCHED_R_OVER_PRICE,
	SCHED_R_OVER_QUOTA,
	SCHED_R_BORROWING_LIMIT,
	SCHED_R_RESERVED,		/* capacity held for an older job that waits */
	SCHED_R_INSUFFICIENT_CAPACITY,
	SCHED_R_TOPOLOGY_SPLIT,
	SCHED_R_QUEUE_BLOCKED,		/* strict_fifo: waits behind the queue head */
	SCHED_R_NOT_ATTEMPTED,		/* job not considered this cycle */
	SCHED_NREASONS
};

const char	*sched_reason_code(enum sched_reason r);

struct sched_config {
	int64_t	stale_after;		/* seconds a snapshot is trusted (120) */
	int64_t	starve_after;		/* seconds before a waiting head holds a cluster (600) */
	int64_t	stockout_half_life;	/* seconds (900) */
	double	w_price;		/* weight of relative price (1.0) */
	double	w_fit;			/* weight of best fit (1.0) */
	double	w_region;		/* weight of region preference (0.5) */
	double	w_stockout;		/* weight of the decayed stockout penalty (1.0) */
	size_t	max_candidates;		/* candidates kept per decision, 0 = all (32) */
	size_t	max_holds;		/* clusters held for waiting heads per cycle (8) */
	bool	preempt;		/* allow preemption in the cycle (true) */
	bool	migrate;		/* plan capacity-preference migrations (true) */
	int64_t	migrate_min_run_s;	/* default run time before a migration (600) */
	int64_t	migrate_cooldown_s;	/* default time between two migrations (1800) */
	int	migrate_max;		/* default migrations per job (2) */
	size_t	max_migrations_cycle;	/* migrations planned per cycle (16) */
	bool	lean_pending;		/* a cycle's pending decisions keep no candidates or
					 * allocations, only their reason and counts (false):
					 * the scheduler stores nothing else of them, and at
					 * 100,000 pending they would take 15 MiB */
	size_t	pending_window;		/* queue/sched/loader.c: pending jobs loaded, in all,
					 * shared evenly among the queues (at least 64 each):
					 * each queue's head in its order (0: every one) */
};

void	sched_config_default(struct sched_config *c);

/* GKE dynamic slicing (TPU7x, All Capacity mode): a 4x4x4 sub-block's nodes name their
 * partition of each of these shapes (providers/kube.h lists the same, smallest first); a
 * slice job of one of them is carved out of a free partition (sched_pack.c). */
#define SCHED_TPU_PARTS	5
extern const char *const sched_tpu_part_shapes[SCHED_TPU_PARTS];

struct sched_node {
	const char		*id;		/* NULL for a node grown this cycle */
	int			 pool;
	int			 rack;		/* interned, -1 none: NVLink domain / rack */
	int			 block;		/* interned, -1 none: scale unit / IB block
						 * holding the rack (none: one per cluster) */
	int			 slice;		/* interned slice id, -1 none */
	int			 shape;		/* interned slice shape, -1 none */
	int			 part[SCHED_TPU_PARTS];	/* interned dynamic-slicing partition
							 * of each shape, -1 none */
	struct sched_vec	 alloc;		/* allocatable */
	struct sched_vec	 free;		/* free now (snapshot minus in-flight) */
};

struct sched_pool {
	int			 flavor;
	bool			 spot;
	enum sched_ctype	 ctype;		/* SCHED_CT_SPOT when spot, else as the row says */
	double			 price;		/* per node-hour */
	int			 accel_per_node;	/* 0: node_alloc's */
	struct sched_vec	 node_alloc;	/* one node's allocatable (growth, price share) */
	int			 grow_nodes;	/* nodes the pool may still add */
	double			 stockout_penalty;
	int64_t			 stockout_at;	/* unix seconds of the last stockout */
	/* derived */
	struct sched_vec	 sum_free;	/* over existing nodes */
	struct sched_vec	 max_free;	/* per resource, over existing nodes */
	int			 held_by;	/* job index holding this pool, -1 none */
};

struct sched_cluster {
	const char		*id;
	int			 idx;
	int			 env, region, provider;	/* interned */
	bool			 ready, cordoned, reachable;
	int64_t			 observed_at;		/* snapshot time, unix seconds */
	struct sched_pool	*pools;
	size_t			 n_pools, cap_pools;
	struct sched_node	*nodes;
	size_t			 n_nodes, cap_nodes;
	uint64_t		 flavor_mask;		/* derived */
};

struct sched_quota {
	struct sched_vec	 nominal;	/* SCHED_UNSET = unmanaged */
	struct sched_vec	 borrow_limit;	/* SCHED_UNSET = no limit */
	struct sched_vec	 lend_limit;	/* SCHED_UNSET = all of nominal */
};

struct sched_queue {
	const char		*id;
	int			 idx;
	int			 env, cohort;		/* interned; cohort -1 = alone */
	double			 weight;
	enum sched_strategy	 strategy;
	/* capacity preference of the queue (queues.capacity_preference), for jobs that
	 * state none; -1: the scheduler's default */
	unsigned char		 pref[SCHED_NCTYPES];
	int			 n_pref;
	bool			 first_only;
	int			 max_migrations, min_run_s, cooldown_s;
	bool			 has_quota[SCHED_MAX_FLAVORS];
	struct sched_quota	 quota[SCHED_MAX_FLAVORS];	/* absent flavor: nominal 0 */
	/* derived */
	int			 group;			/* index into the model's cohorts */
	struct sched_vec	 usage[SCHED_MAX_FLAVORS];
	double			 ratio;			/* max borrowed/lendable now */
	int			*pending;		/* sorted pending job indices */
	size_t			 n_pending, cursor;
	bool			 blocked;
	/* The loader's pending window (sched_config.pending_window) left jobs of this queue
	 * out: the cycle stops before the point where the next of them would be tried
	 * (sched_cycle.c:next_queue) */
	bool			 more;
	bool			 open;			/* derived: more, and its last loaded job
							 * (grows aside) admitted this cycle */
	uint64_t		 gen;			/* bumped when usage changes */
	uint64_t		 memo_gen;		/* share of the head, cached */
	int			 memo_job;
	double			 memo_share;
	bool			 memo_borrowing;
};

struct sched_cohort {
	int			 name;			/* interned, -1 for a lone queue */
	int			 env;
	uint64_t		 flavor_mask;
	struct sched_vec	 lendable[SCHED_MAX_FLAVORS];
	struct sched_vec	 used[SCHED_MAX_FLAVORS];	/* sum of usage over guaranteed */
};

struct sched_group {
	int			 flavor;
	int			 min, max;	/* replicas; max == min when not elastic */
	int			 count;		/* admitted replicas (admitted/running jobs) */
	bool			 head;		/* the Ray head: on-demand cpu pools only */
	int			 hosts;		/* pods per replica: the hosts of one TPU
						 * slice (each replica a whole slice), else 1 */
	struct sched_vec	 pod;		/* per pod */
};

/* Pods of one group on one node.  node < 0 while the alloc names a node still to grow. */
struct sched_alloc {
	int			 node;
	int			 pool;
	int			 group;
	int			 pods;
	bool			 grown;		/* on a node added from headroom */
	struct sched_vec	 res;		/* pods * per-pod */
};

struct sched_flavor_req {
	int			 flavor;
	struct sched_vec	 v;
};

/* Laid out by size (pointers and 64-bit values, then 32-, 16- and 8-bit ones, the flags as
 * bits) so that no padding is left: 224 bytes (192 before the grow fields).  At 100,000 pending jobs every byte here is
 * 100 kB of the scheduler's peak (issue 29: 64 MiB; tests/unit/queue/test_sched_memory.c
 * bounds it). */
struct sched_job {
	const char		*id;		/* in the model's string pool */
	/* Per-job arrays live in the model's arena, sized to what the job has (at most
	 * SCHED_MAX_GROUPS groups, SCHED_MAX_CHOICES regions or providers); jobs of equal
	 * groups share one copy (sched_job_keep_groups). */
	struct sched_group	*groups;
	struct sched_flavor_req	*req;		/* derived: cap_groups entries, in the arena */
	int			*regions;	/* allowed, in preference order */
	int			*providers;
	/* placement of admitted/running jobs */
	struct sched_alloc	*allocs;
	size_t			 n_allocs;
	/* Jobs whose admission evicted this one (ids, in the arena): it never evicts them
	 * back, so a preemption cannot turn into a preempt-requeue cycle.  The scheduler
	 * persists them as the "by" of its preempted events (queue/sched/loader.c reads them). */
	const char		**evicted_by;
	/* Nodes its earlier attempts failed on (infrastructure, preemption): pairs of cluster
	 * id and node name, in the arena; never used for it again (issue 24). */
	const char		**avoid;
	int			*grow_racks;	/* a grow's interned racks allowed, in the arena */
	int64_t			 enqueued_at, admitted_at;
	int64_t			 started_at;	/* running since (unix s), 0 unknown */
	int64_t			 migrated_at;	/* last migration (unix s), 0 none */
	double			 max_price;	/* per accelerator-hour, 0 = no limit */
	uint64_t		 flavor_mask;	/* derived */
	int			 idx;
	int			 queue;
	int			 priority;
	int			 shape;		/* interned slice shape for SCHED_TOPO_SLICE */
	int			 cluster;	/* -1 none */
	int			 hold_cluster;	/* cluster held for it across cycles, -1 none;
						 * the caller persists sched_decision.hold_cluster */
	/* A grow request (sched_grow.c, issue 26): "<job id>#grow:<n>", the workers an
	 * autoscaler added above what its job was admitted with, as a gang of their own: same
	 * queue, priority and preemption class as the job, placed on the job's cluster only,
	 * in the group's domain (its pool; the job's node for topology host, its racks for
	 * rack and pack, grow_racks), on nodes that exist (never a node still to grow: the
	 * group's pin must name it).  A higher-priority job takes grows before whole jobs. */
	int			 grow_of;	/* the job's index, -1: not a grow */
	int			 grow_group;	/* the job's group it grows (placement group) */
	int			 grow_cluster;	/* cluster index, -1 none */
	int			 grow_pool;	/* pool index there, -1 any */
	int			 grow_node;	/* node index there, -1 any */
	int			 n_grow_racks;	/* 0: any */
	int			 rank;		/* derived: position in its queue's pending order */
	int			 min_run_s, cooldown_s;	/* seconds, at most a week (jobspec) */
	short			 n_groups, cap_groups;
	short			 n_req;
	short			 n_regions, cap_regions;
	short			 n_providers, cap_providers;
	short			 n_evicted_by;
	short			 n_avoid;
	short			 migrations;	/* capacity migrations so far */
	short			 max_migrations;
	uint8_t			 state;		/* enum sched_state */
	uint8_t			 topo;		/* enum sched_topo */
	uint8_t			 spot;		/* enum sched_spot */
	/* Capacity preference (queue/sched/sched_prefs.c): the ranked capacity types, from the
	 * job's constraints or else its queue; n_pref 0 = any type, no preference. */
	unsigned char		 pref[SCHED_NCTYPES];
	unsigned char		 n_pref;
	bool			 first_only : 1;	/* waits for pref[0]; never migrates */
	bool			 can_preempt : 1;
	bool			 in_flight : 1;		/* reservation not yet in the snapshot */
	bool			 shared_groups : 1;	/* groups and req are shared with equal
							 * jobs (sched_job_keep_groups): copied
							 * before any write (sched_job_own_groups) */
	bool			 moving : 1;	/* a move of it is under way (never migrated) */
};

struct sched_model;

/* Building.  Strings are copied.  Returned pointers stay valid for the model's life.
 * Clusters, pools, nodes and queues come before sched_model_finalize; pending jobs
 * (with their groups) may also be added after it, between cycles. */
struct sched_model	*sched_model_new(const struct sched_config *cfg, int64_t now);
void			 sched_model_free(struct sched_model *m);
void			 sched_model_set_now(struct sched_model *m, int64_t now);
int			 sched_model_intern(struct sched_model *m, const char *s); /* NULL -> -1 */
const char		*sched_model_name(const struct sched_model *m, int id);
bool			 sched_model_flavor(struct sched_model *m, const char *flavor, int *out,
			    struct err *e);

struct sched_cluster	*sched_model_add_cluster(struct sched_model *m, const char *id,
			    const char *env, const char *region, const char *provider,
			    struct err *e);
struct sched_pool	*sched_cluster_add_pool(struct sched_model *m, struct sched_cluster *c,
			    const char *flavor, bool spot, double price, struct err *e);
/* rack, slice, shape may be NULL. */
bool			 sched_pool_add_node(struct sched_model *m, struct sched_cluster *c,
			    struct sched_pool *p, const char *id, const char *rack,
			    const char *slice, const char *shape, struct sched_vec alloc,
			    struct sched_vec free, struct err *e);

/* Names the partition of shape sched_tpu_part_shapes[k] that c's last added node belongs
 * to (GKE dynamic slicing); NULL = none. */
void			 sched_node_set_partition(struct sched_model *m, struct sched_cluster *c,
			    int k, const char *id);
/* 1 + the index in sched_tpu_part_shapes of the partitions a slice job's allocations
 * al[0..n) on c use (sched_placement.part_shape), 0 when they are fixed slices (a node of a
 * dynamic-slicing sub-block is in no fixed slice: providers/kube.c). */
int			 sched_slice_part_of(const struct sched_model *m,
			    const struct sched_job *j, const struct sched_cluster *c,
			    const struct sched_alloc *al, size_t n);
/* Index in sched_tpu_part_shapes of the interned shape, -1 when none. */
int			 sched_tpu_part_of(const struct sched_model *m, int shape);
/* Names the scale unit (InfiniBand block, GKE block, AWS layer 2) of c's last added node;
 * NULL = none. */
void			 sched_node_set_block(struct sched_model *m, struct sched_cluster *c,
			    const char *block);
/* Distinct racks of the accelerator allocations al[0..n) of j on c (nodes to grow: none). */
int			 sched_racks_of(const struct sched_job *j, const struct sched_cluster *c,
			    const struct sched_alloc *al, size_t n);

struct sched_queue	*sched_model_add_queue(struct sched_model *m, const char *id,
			    const char *env, const char *cohort, double weight,
			    enum sched_strategy strategy, struct err *e);
bool			 sched_queue_set_quota(struct sched_model *m, struct sched_queue *q,
			    const char *flavor, const struct sched_quota *quota, struct err *e);

struct sched_job	*sched_model_add_job(struct sched_model *m, const char *id,
			    const char *queue, int priority, int64_t enqueued_at,
			    enum sched_state state, struct err *e);
/* max < min is refused; max == 0 means max = min. */
bool			 sched_job_add_group(struct sched_model *m, struct sched_job *j,
			    const char *flavor, int min, int max, struct sched_vec pod,
			    struct err *e);
/* Building a job's groups without an allocation per job: sched_job_build_groups points j
 * at the model's scratch arrays (call before its first sched_job_add_group), and
 * sched_job_keep_groups then stores them: a job shares one copy with every job of equal
 * groups (counts included: pending jobs share theirs, admitted ones theirs; at 100,000
 * pending jobs of a few shapes that is 160 bytes less per job), the first of a shape gets
 * one sized to what it has.  A write to a shared job's groups or req goes after
 * sched_job_own_groups (an admission rewrites them in the scratch, then keeps them). */
void			 sched_job_build_groups(struct sched_model *m, struct sched_job *j);
void			 sched_job_keep_groups(struct sched_model *m, struct sched_job *j);
void			 sched_job_own_groups(struct sched_model *m, struct sched_job *j);
/* Records that job id `by` evicted j (see evicted_by); a repeated id is kept once. */
bool			 sched_job_evicted_by(struct sched_model *m, struct sched_job *j,
			    const char *by);
/* Records that j never uses node of cluster_id (see avoid); sched_job_avoids asks. */
bool			 sched_job_avoid_node(struct sched_model *m, struct sched_job *j,
			    const char *cluster_id, const char *node);
bool			 sched_job_avoids(const struct sched_job *j, const char *cluster_id,
			    const char *node);
bool			 sched_job_allow_region(struct sched_model *m, struct sched_job *j,
			    const char *region, struct err *e);
bool			 sched_job_allow_provider(struct sched_model *m, struct sched_job *j,
			    const char *provider, struct err *e);
/* Grow requests (sched_grow.c).  Adds the grow id of job `parent` (placed, its allocations
 * loaded): `pods` more pods of the parent's group `group`, pending (enqueued at `at`) or
 * admitted (then give it its cluster and allocations, group 0, as for a job).  NULL with e
 * when the group is not one of the parent's worker groups. */
struct sched_job	*sched_model_add_grow(struct sched_model *m, const char *id,
			    struct sched_job *parent, int group, int pods, enum sched_state st,
			    int64_t at, struct err *e);
bool			 sched_job_is_grow(const struct sched_job *j);
/* Placement of an admitted/running job; then one alloc per (group, node).
 * node NULL = a node grown from the first pool of the group's flavor with headroom. */
bool			 sched_job_set_cluster(struct sched_model *m, struct sched_job *j,
			    const char *cluster, bool in_flight, int64_t admitted_at,
			    struct err *e);
bool			 sched_job_add_alloc(struct sched_model *m, struct sched_job *j,
			    int group, const char *node, int pods, struct err *e);

/* Recomputes c's pool aggregates after its nodes' free values were edited. */
void			 sched_cluster_refresh(struct sched_cluster *c);

/* Builds indexes, usage, in-flight reservations.  Call once after filling. */
bool			 sched_model_finalize(struct sched_model *m, struct err *e);

/* Access. */
size_t			 sched_model_n_clusters(const struct sched_model *m);
size_t			 sched_model_n_queues(const struct sched_model *m);
size_t			 sched_model_n_jobs(const struct sched_model *m);
struct sched_cluster	*sched_model_cluster(const struct sched_model *m, size_t i);
struct sched_queue	*sched_model_queue(const struct sched_model *m, size_t i);
struct sched_job	*sched_model_job(const struct sched_model *m, size_t i);
struct sched_job	*sched_model_find_job(const struct sched_model *m, const char *id);
struct sched_cluster	*sched_model_find_cluster(const struct sched_model *m, const char *id);
struct sched_queue	*sched_model_find_queue(const struct sched_model *m, const char *id);

/* Bytes the model holds now: its arena, job id pool, arrays and tables (not a cycle's arena,
 * nor the lean_pending scratch arena, which is renewed past 1 MiB).  At 100,000 pending jobs
 * this is most of the scheduler's peak: tests/unit/queue/test_sched_memory.c bounds it per
 * pending job. */
size_t			 sched_model_bytes(const struct sched_model *m);

/* State changes the caller (or a simulation) makes between cycles. */
void			 sched_model_finish_job(struct sched_model *m, struct sched_job *j);
void			 sched_model_requeue_job(struct sched_model *m, struct sched_job *j);

/* Fair share (sched_fairshare.c). */
void			 sched_job_request(const struct sched_job *j, bool admitted,
			    struct sched_flavor_req *out, short *n);
enum sched_reason	 sched_quota_check(const struct sched_model *m, const struct sched_job *j);
/* What queue q may still take of resource r of flavor f (borrowing limit and cohort);
 * SCHED_UNSET when unmanaged. */
int64_t			 sched_quota_room(const struct sched_model *m, const struct sched_queue *q,
			    int f, int r);
/* Weighted dominant-resource share of q now, or after admitting j (j may be NULL). */
double			 sched_share(const struct sched_model *m, const struct sched_queue *q,
			    const struct sched_job *j, bool *borrowing);
void			 sched_usage_add(struct sched_model *m, const struct sched_job *j, int sign);

/* Placement (sched_placement.c). */
struct sched_candidate {
	int			 cluster;
	enum sched_reason	 reason;
	double			 score;		/* lower is better; NAN when filtered out */
};

struct sched_placement {
	int			 cluster;	/* -1 when nothing fits */
	double			 score;
	struct sched_alloc	*allocs;
	size_t			 n_allocs;
	struct sched_candidate	*cands;		/* winner first, then by score */
	size_t			 n_cands;
	/* SCHED_NREASONS counts of clusters by reason (of one environment: below 65,536): in
	 * the arena given to sched_place (the model's scratch, valid until its next call,
	 * when none); NULL in a pending decision of a lean_pending cycle, which keeps its
	 * reason only */
	uint16_t		*counts;
	enum sched_reason	 reason;	/* the most telling reason when nothing fits */
	/* topology rack and pack, when placed with an arena: the racks the accelerator gang
	 * uses, and how many the same gang would use placed with topology none now (-1:
	 * not known) */
	int			 racks_used;
	int			 racks_scattered;
	/* topology slice carved out of dynamic-slicing sub-blocks: 1 + the index in
	 * sched_tpu_part_shapes of the partitions the allocations use; 0: whole fixed slices
	 * (or no slice) */
	int			 part_shape;
};

/* Static filter for j on c: the first failing check, or SCHED_R_CHOSEN. */
enum sched_reason	 sched_cluster_filter(const struct sched_model *m, const struct sched_job *j,
			    const struct sched_cluster *c);
/* Exact gang fit of j on c (allocs from a). */
enum sched_reason	 sched_pack(struct sched_model *m, const struct sched_job *j,
			    const struct sched_cluster *c, struct arena *a,
			    struct sched_alloc **allocs, size_t *n_allocs);
/* Filters, scores and packs j over all clusters of its environment.  quota is the
 * job's quota verdict (SCHED_R_CHOSEN when it fits quota).  Returns true when placed. */
bool			 sched_place(struct sched_model *m, const struct sched_job *j,
			    enum sched_reason quota, struct arena *a, struct sched_placement *out);
void			 sched_apply(struct sched_model *m, struct sched_job *j, int cluster,
			    struct sched_alloc *allocs, size_t n_allocs);
void			 sched_release(struct sched_model *m, struct sched_job *j);
double			 sched_stockout_now(const struct sched_model *m, const struct sched_pool *p);

/* Preemption (sched_preempt.c). */
struct sched_preemption {
	int			 cluster;
	int			*victims;	/* job indices */
	size_t			 n_victims;
	struct sched_alloc	*allocs;
	size_t			 n_allocs;
};

/* Who preempts: a pending job the scheduler admits, or a placed job that moves
 * (queue/change/move.c).  Both plan with sched_preempt_plan and write with
 * scheduler_preempt; this says where they differ. */
enum sched_preemptor { SCHED_PREEMPT_ADMIT, SCHED_PREEMPT_MOVE };

/* Smallest victim set on one cluster that lets j fit, or false.  For a move, only when j's
 * class may preempt and only victims of strictly lower priority than j (a plan with any
 * other victim is refused, not searched past).  Leaves the model as found. */
bool			 sched_preempt_plan(struct sched_model *m, const struct sched_job *j,
			    enum sched_preemptor by, struct arena *a,
			    struct sched_preemption *out);

/* Cycle (sched_cycle.c). */
enum sched_outcome { SCHED_OUT_ADMIT, SCHED_OUT_PENDING };

/* One job's decision.  48 bytes, one per pending job each cycle: the placement is a
 * pointer, to the attempt's (an admission's, or any decision's without lean_pending) in
 * the cycle's arena, or to one shared empty placement (cluster -1, no detail) for a
 * pending decision of a lean_pending cycle and a job never attempted.  In a lean_pending
 * cycle an admission's allocs are the admitted job's own (sched_job.allocs): read them
 * before the job is requeued or the model freed. */
struct sched_decision {
	const struct sched_placement *place;	/* cluster/allocs for an admission */
	int			*victims;
	double			 share;		/* queue share after admission */
	uint32_t		 n_victims;
	int			 job;
	int			 position;	/* pending: 1-based in its queue */
	int			 hold_cluster;	/* pending: cluster held for it, -1 none */
	uint8_t			 outcome;	/* enum sched_outcome */
	uint8_t			 reason;	/* enum sched_reason; pending: why */
	bool			 borrowing;
};

/* A planned capacity migration: j moves into free capacity of a more preferred type. */
struct sched_migration {
	int			 job;
	struct sched_placement	 place;		/* the target */
	int			 from_rank, to_rank;
};

struct sched_cycle {
	struct sched_decision	*d;
	size_t			 n;
	struct sched_migration	*mig;		/* capacity migrations, after the admissions */
	size_t			 n_mig;
	size_t			 admitted, preempted, pending;
	size_t			 preempt_searches;	/* preemption plans computed */
	size_t			 preempt_memo_hits;	/* skipped: an equal job just failed */
};

/* Runs one cycle: every pending job gets one decision (admissions first, in
 * order).  Applies admissions and preemptions to the model.  Memory from a. */
void			 sched_cycle_run(struct sched_model *m, struct arena *a,
			    struct sched_cycle *out);

/* Capacity preferences (sched_prefs.c). */
/* Rank of ctype t for j (0 best); n_pref when j does not take t; 0 without preferences. */
int			 sched_job_rank(const struct sched_job *j, enum sched_ctype t);
/* Rank j has where it is placed now: the worst rank over its accelerator allocations. */
int			 sched_job_placed_rank(const struct sched_model *m, const struct sched_job *j);
/* sched_place over the job's ranked types, best first (pref[0] only when first_only);
 * *rank is the winner's rank.  Without preferences, sched_place. */
bool			 sched_place_pref(struct sched_model *m, const struct sched_job *j,
			    enum sched_reason quota, struct arena *a, struct sched_placement *out,
			    int *rank);
/* Why a placed job is or is not migrated now ("on_first_choice", "min_run_time",
 * "cooldown", "max_migrations", "first_choice_only", "no_room", "migrate", ...). */
enum sched_migrate_verdict {
	SCHED_MV_NO_PREFERENCE, SCHED_MV_FIRST_CHOICE, SCHED_MV_NOT_RUNNING,
	SCHED_MV_MIN_RUN, SCHED_MV_COOLDOWN, SCHED_MV_MAX, SCHED_MV_NO_ROOM, SCHED_MV_MIGRATE
};
const char		*sched_migrate_verdict_code(enum sched_migrate_verdict v);
/* Tries j's better ranks on free capacity (the model unchanged); on SCHED_MV_MIGRATE *out
 * is the target (memory from a) and *to_rank its rank. */
enum sched_migrate_verdict sched_migrate_check(struct sched_model *m, const struct sched_job *j,
			    struct arena *a, struct sched_placement *out, int *to_rank);
/* Plans this cycle's migrations after its admissions: running jobs below their first
 * choice, priority then age, into free capacity only (never a victim); each reserves its
 * target in the model.  Fills out->mig. */
void			 sched_migrate_plan(struct sched_model *m, struct arena *a,
			    struct sched_cycle *out);
/* {order, first_choice_only, current, rank, migrations, max_migrations, verdict, detail}. */
json_t			*sched_explain_prefs(struct sched_model *m, const struct sched_job *j);

/* Explain (sched_explain.c).  New references; NULL only on allocation failure. */
json_t			*sched_decision_to_json(const struct sched_model *m,
			    const struct sched_decision *d);
/* Fresh per-cluster view for one job (pending: position and blocking reason per
 * cluster; admitted: its cluster and allocations). */
json_t			*sched_explain_job(struct sched_model *m, const struct sched_job *j);
/* Allocations al[0..n) of j on cluster (an index; -1: none) as explain shows them. map
 * (NULL: none) renumbers the group member; gen >= 0 adds "spec_update": gen (the pods a
 * spec update added, queue/change/job_update.c). */
json_t			*sched_explain_allocs(const struct sched_model *m,
			    const struct sched_job *j, int cluster, const struct sched_alloc *al,
			    size_t n, const int *map, int gen);

#endif
