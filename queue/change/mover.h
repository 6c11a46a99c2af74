/* mover: carries out moves reserved by queue/change/move.c, one step per visit, recording the
 * phase in jobs.move so a replica that dies mid-move leaves a job the next one resumes:
 * reserved -> checkpointing -> suspended -> applied (-> ready for RayService) -> done. */
#ifndef FLEET_QUEUE_MOVER_H
#define FLEET_QUEUE_MOVER_H

#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"

struct mover_stats {
	size_t	claimed;
	size_t	stepped;	/* phases advanced */
	size_t	moved;		/* moves finished */
	size_t	failed;		/* moves abandoned (job requeued) */
	size_t	retried;
};

/* One pass over moving jobs whose next step is due (tests call it directly). */
bool	mover_round(const char *who, struct mover_stats *st, struct err *e);
bool	mover_start(struct err *e);
void	mover_stop(void);

#endif
