/* cloudsim azure: placeholder until the Azure endpoints land. */
#include "cloudsim/cs.h"

void
cs_azure_handle(struct cs *cs, struct cs_req *rq)
{
	(void)cs;
	cs_reply_error(rq, 404, "ResourceNotFound", "not implemented yet");
}
