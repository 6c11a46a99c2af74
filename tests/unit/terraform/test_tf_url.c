/* test_tf_url: terraform-provider-fleet sends its bearer token over https://, or over
 * http:// to a loopback host only: a call to http://0.0.0.0 (this machine, but not by a
 * loopback name) reaches no listener and carries no token. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/arena.h"
#include "tf.h"

static void
test_url_ok(void **state)
{
	static const struct { const char *url; bool ok; } cases[] = {
		{ "https://fleetd.internal:8443", true },
		{ "https://203.0.113.9", true },
		{ "http://127.0.0.1:8080", true },
		{ "http://127.1.2.3", true },
		{ "http://localhost:8080/", true },
		{ "http://[::1]:8080", true },
		{ "http://fleetd.internal:8080", false },
		{ "http://203.0.113.9", false },
		{ "http://0.0.0.0:8080", false },
		{ "http://localhost.evil.example", false },
		{ "http://127.0.0.1.evil.example", false },
		{ "http://[::ffff:10.0.0.1]", false },
		{ "ftp://127.0.0.1", false },
		{ "127.0.0.1:8080", false },
		{ "", false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (tf_url_ok(cases[i].url) != cases[i].ok)
			fail_msg("%s: want %s", cases[i].url, cases[i].ok ? "allowed" : "refused");
	assert_false(tf_url_ok(NULL));
}

/* A listener on every address; the provider pointed at http://0.0.0.0:<port> must refuse
 * to call it, and the listener sees no connection (before: the token arrived in clear). */
static void
test_plain_http_elsewhere_sends_nothing(void **state)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY) };
	socklen_t sl = sizeof(sa);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), on = 1;
	struct tf_diags d = { .arena = arena_new() };
	struct pollfd p;
	json_t *out = NULL;
	char url[64];
	int st = 0;

	(void)state;
	assert_true(l >= 0);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(l, 4), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&sa, &sl), 0);
	snprintf(url, sizeof(url), "http://0.0.0.0:%d", ntohs(sa.sin_port));
	tf_conf.url = strdup(url);
	tf_conf.token = strdup("fleet_unit-test-token-never-sent");
	tf_conf.timeout_ms = 1000;
	tf_conf.retries = 0;
	tf_conf.configured = true;
	assert_false(tf_api("GET", "/v1/environments", NULL, 200, 0, false, &out, &st, &d));
	assert_null(out);
	assert_true(d.error);
	assert_int_equal(d.n, 1);
	assert_string_equal(d.v[0]->summary, "Insecure fleetd URL");
	p = (struct pollfd){ .fd = l, .events = POLLIN };
	if (poll(&p, 1, 200) > 0) {
		char buf[2048] = "";
		int c = accept(l, NULL, NULL);

		if (c >= 0) {
			usleep(100 * 1000);
			(void)!recv(c, buf, sizeof(buf) - 1, MSG_DONTWAIT);
			close(c);
		}
		fail_msg("the provider connected to %s: %.200s", url, buf);
	}
	close(l);
	free(tf_conf.url);
	free(tf_conf.token);
	tf_conf.url = tf_conf.token = NULL;
	arena_free(d.arena);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_url_ok),
		cmocka_unit_test(test_plain_http_elsewhere_sends_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
