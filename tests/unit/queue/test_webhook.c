/* test_webhook: the endpoint URL rule, the signature header against a digest computed by
 * Python's hmac module, and the bounds of the retry delay. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "queue/hooks/delivery.h"
#include "queue/hooks/webhook.h"

static void
test_url(void **state)
{
	static const struct { const char *url, *code; } cases[] = {
		{ "https://hooks.example.com/fleet", NULL },
		{ "https://hooks.example.com:8443", NULL },
		{ "https://[2001:db8::1]:443/x?y=1", NULL },
		{ "http://127.0.0.1:9000/hook", NULL },
		{ "http://localhost/hook", NULL },
		{ "http://[::1]:8080/", NULL },
		{ "http://hooks.example.com/x", "webhook.insecure_url" },
		{ "http://127.0.0.1.nip.io/x", "webhook.insecure_url" },
		{ "http://10.0.0.1/x", "webhook.insecure_url" },
		{ "ftp://hooks.example.com/x", "webhook.bad_url" },
		{ "hooks.example.com", "webhook.bad_url" },
		{ "https://", "webhook.bad_url" },
		{ "https://:443/x", "webhook.bad_url" },
		{ "https://user:pw@hooks.example.com/", "webhook.bad_url" },
		{ "https://hooks.example.com:99999/", "webhook.bad_url" },
		{ "https://hooks.example.com:x/", "webhook.bad_url" },
		{ "https://hooks.example.com/a b", "webhook.bad_url" },
		{ "https://[::1/x", "webhook.bad_url" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct err e = { 0 };
		bool ok = webhook_url_ok(cases[i].url, &e);

		if (ok != (cases[i].code == NULL) ||
		    (!ok && (strcmp(e.code, cases[i].code) != 0 || strcmp(e.pointer, "/url") != 0)))
			fail_msg("%s: ok %d code %s", cases[i].url, ok, e.code);
	}
	assert_true(webhook_type_known("job.failed"));
	assert_true(webhook_type_known("*"));
	assert_false(webhook_type_known("job.*"));
}

static void
test_sign(void **state)
{
	/* python3: hmac.new(b'whsec_abc', b'1700000000.{"id":1}', hashlib.sha256).hexdigest() */
	static const char want[] =
	    "t=1700000000,v1=18c046f8eef45b069779eaa1dca0fd321afacde38b5c7b2b9d1a88a11cd9dc5e";
	char sig[WEBHOOK_SIG_MAX];

	(void)state;
	webhook_sign("whsec_abc", NULL, 1700000000LL, "{\"id\":1}", 8, sig);
	assert_string_equal(sig, want);
	webhook_sign("whsec_new", "whsec_abc", 1700000000LL, "{\"id\":1}", 8, sig);
	assert_int_equal(strncmp(sig, "t=1700000000,v1=", 16), 0);
	assert_non_null(strstr(sig, want + 13));	/* ",v1=<old>" second */
	assert_true(strstr(sig, want + 13) > sig + 16);
}

static void
test_backoff(void **state)
{
	(void)state;
	for (unsigned r = 0; r < 2000; r += 7) {
		long d1 = delivery_backoff_ms(1, 1000, 600000, r);
		long d4 = delivery_backoff_ms(4, 1000, 600000, r);
		long d30 = delivery_backoff_ms(30, 1000, 600000, r);

		assert_true(d1 >= 500 && d1 <= 1000);
		assert_true(d4 >= 4000 && d4 <= 8000);
		assert_true(d30 >= 300000 && d30 <= 600000);	/* capped */
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_url),
		cmocka_unit_test(test_sign),
		cmocka_unit_test(test_backoff),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
