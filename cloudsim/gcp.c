/* cloudsim gcp: placeholder until the Google endpoints land. */
#include "cloudsim/cs.h"

void
cs_gcp_handle(struct cs *cs, struct cs_req *rq)
{
	(void)cs;
	cs_reply_error(rq, 404, "NOT_FOUND", "not implemented yet");
}
