/* static_responder: the baseline of bench/http.sh — libmicrohttpd with the same threading
 * as fleetd, answering a constant JSON body to every request. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <microhttpd.h>

static const char body[] = "{\"status\":\"ok\"}";

static enum MHD_Result
on_access(void *cls, struct MHD_Connection *c, const char *url, const char *method,
	  const char *version, const char *upload, size_t *upload_size, void **req_cls)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	(void)cls; (void)url; (void)method; (void)version; (void)upload; (void)upload_size;
	if (*req_cls == NULL) {
		*req_cls = (void *)1;
		return MHD_YES;
	}
	r = MHD_create_response_from_buffer(sizeof(body) - 1, (void *)body, MHD_RESPMEM_PERSISTENT);
	MHD_add_response_header(r, "Content-Type", "application/json");
	ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}

int
main(int argc, char **argv)
{
	int port = argc > 1 ? atoi(argv[1]) : 18181;
	int threads = argc > 2 ? atoi(argv[2]) : 4;
	struct MHD_Daemon *d;
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, (uint16_t)port,
	    NULL, NULL, on_access, NULL, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)threads,
	    MHD_OPTION_CONNECTION_LIMIT, 1024u, MHD_OPTION_END);
	if (d == NULL)
		return 1;
	sigwait(&set, &sig);
	MHD_stop_daemon(d);
	return 0;
}
