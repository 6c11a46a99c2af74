/* cloudsim main: command line, state dir outputs, the two listeners and the simulation
 * ticker; runs until SIGINT or SIGTERM. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cloudsim/cs.h"
#include "core/log.h"
#include "core/mono.h"

struct cs *cs_g;
static volatile sig_atomic_t stop;

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void
usage(void)
{
	fprintf(stderr, "usage: cloudsim --fleet FILE --listen 127.0.0.1:PORT --state-dir DIR "
	    "[--time-scale X] [--crd-dir DIR] [--allow-non-loopback]\n");
}

struct opts {
	const char	*fleet;
	char		 host[64];
	int		 port;
	const char	*dir;
	const char	*crd_dir;
	double		 scale;
	bool		 any_host;
};

static bool
parse_args(int argc, char **argv, struct opts *o)
{
	int i;

	memset(o, 0, sizeof(*o));
	snprintf(o->host, sizeof(o->host), "127.0.0.1");
	o->scale = 1;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--allow-non-loopback") == 0) {
			o->any_host = true;
			continue;
		}
		if (v == NULL)
			return false;
		i++;
		if (strcmp(a, "--fleet") == 0) {
			o->fleet = v;
		} else if (strcmp(a, "--crd-dir") == 0) {
			o->crd_dir = v;
		} else if (strcmp(a, "--state-dir") == 0) {
			o->dir = v;
		} else if (strcmp(a, "--time-scale") == 0) {
			o->scale = atof(v);
			if (!(o->scale > 0 && o->scale <= 100000))
				return false;
		} else if (strcmp(a, "--listen") == 0) {
			const char *c = strrchr(v, ':');

			if (c == NULL || (size_t)(c - v) >= sizeof(o->host))
				return false;
			snprintf(o->host, sizeof(o->host), "%.*s", (int)(c - v), v);
			o->port = atoi(c + 1);
			if (o->port < 0 || o->port > 65535)
				return false;
		} else {
			return false;
		}
	}
	if (o->fleet == NULL || o->dir == NULL)
		return false;
	if (!o->any_host && strncmp(o->host, "127.", 4) != 0) {
		fprintf(stderr, "cloudsim: refusing to listen on %s (use --allow-non-loopback)\n",
		    o->host);
		return false;
	}
	return true;
}

static void
write_port(struct cs *cs, const char *name, const char *url)
{
	struct err e = { 0 };
	char buf[16];

	snprintf(buf, sizeof(buf), "%s\n", strrchr(url, ':') + 1);
	if (!cs_write_file(cs->state_dir, name, buf, &e))
		fprintf(stderr, "cloudsim: %s\n", e.msg);
}

/* Faults the fleet file starts with ("faults": [...], same shape as POST /_sim/faults). */
static bool
load_faults(struct cs *cs, struct err *e)
{
	json_t *f;
	size_t i;

	json_array_foreach(json_object_get(cs->fleet, "faults"), i, f)
		if (!cs_fault_add(cs, f, NULL, e))
			return false;
	return true;
}

int
main(int argc, char **argv)
{
	static struct cs cs;
	struct opts o;
	struct err e = { 0 };
	struct timespec ts;
	char *key = NULL, *cert = NULL;
	int rc = 1;

	if (!parse_args(argc, argv, &o)) {
		usage();
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	pthread_mutex_init(&cs.lock, NULL);
	cs_g = &cs;
	cs.time_scale = o.scale;
	clock_gettime(CLOCK_REALTIME, &ts);
	cs.wall0 = ts.tv_sec + ts.tv_nsec / 1e9;
	cs.mono0 = mono_s();
	cs.next_fault = 1;
	cs.apply_counts = json_object();
	cs.crds = json_object();
	mkdir(o.dir, 0700);
	cs.state_dir = realpath(o.dir, NULL);
	if (cs.state_dir == NULL) {
		fprintf(stderr, "cloudsim: state dir %s: %s\n", o.dir, strerror(errno));
		return 1;
	}
	if ((o.crd_dir != NULL && !cs_crds_load(&cs, o.crd_dir, &e)) ||
	    !cs_fleet_load(&cs, o.fleet, &e) || !cs_persist_load(&cs, &e) ||
	    !cs_pki_init(cs.state_dir, &key, &cert, &e)) {
		fprintf(stderr, "cloudsim: %s\n", e.msg);
		goto cleanup;
	}
	/* port 0: the earlier run's ports when free, so stored API server URLs stay valid */
	if (!(o.port == 0 && cs_persist_port(&cs, "port") > 0 &&
	    cs_http_start(&cs, o.host, cs_persist_port(&cs, "port"), cs_persist_port(&cs,
	    "kube_port"), key, cert, &e)) &&
	    !cs_http_start(&cs, o.host, o.port, 0, key, cert, &e)) {
		fprintf(stderr, "cloudsim: %s\n", e.msg);
		goto cleanup;
	}
	if (!load_faults(&cs, &e) || !cs_write_outputs(&cs, &e)) {
		fprintf(stderr, "cloudsim: %s\n", e.msg);
		goto cleanup;
	}
	write_port(&cs, "kube_port", cs.kube_url);
	write_port(&cs, "port", cs.base_url);	/* last: callers wait for this file */
	log_info(NULL, "cloudsim", "listening", "{s:s, s:s, s:i}", "url", cs.base_url,
	    "kube_url", cs.kube_url, "clusters", (int)cs.nclusters);
	while (!stop) {
		usleep(100000);
		pthread_mutex_lock(&cs.lock);
		cs_tick(&cs);
		cs_watch_sync_all(&cs);
		cs_persist_tick(&cs);
		pthread_mutex_unlock(&cs.lock);
	}
	pthread_mutex_lock(&cs.lock);
	cs_persist_save(&cs);
	pthread_mutex_unlock(&cs.lock);
	rc = 0;
cleanup:
	cs_http_stop();
	cs_fleet_free(&cs);
	free(key);
	free(cert);
	free(cs.state_dir);
	json_decref(cs.apply_counts);
	json_decref(cs.crds);
	pthread_mutex_destroy(&cs.lock);
	return rc;
}
