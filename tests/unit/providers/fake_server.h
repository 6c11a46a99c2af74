/* fake_server: a tiny HTTP server on 127.0.0.1 that answers every request with one fixed
 * JSON body and counts what it served (fake_start, fake_stop), for tests of a client's
 * paging and truncation limits.  Header-only. */
#ifndef FLEET_TESTS_FAKE_SERVER_H
#define FLEET_TESTS_FAKE_SERVER_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

struct fake {
	int		 fd;
	int		 port;
	const char	*body;
	int		 served;
	pthread_t	 thr;
};

static inline void *
fake_main(void *arg)
{
	struct fake *f = arg;
	char buf[8192], head[256];
	int c;

	while ((c = accept(f->fd, NULL, NULL)) >= 0) {
		ssize_t n = recv(c, buf, sizeof(buf) - 1, 0);

		if (n > 0) {
			snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Type: "
			    "application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
			    strlen(f->body));
			if (send(c, head, strlen(head), MSG_NOSIGNAL) < 0 ||
			    send(c, f->body, strlen(f->body), MSG_NOSIGNAL) < 0)
				f->served--;
			f->served++;
		}
		close(c);
	}
	return NULL;
}

static inline void
fake_start(struct fake *f, const char *body)
{
	struct sockaddr_in a = { 0 };
	socklen_t len = sizeof(a);

	f->body = body;
	f->served = 0;
	f->fd = socket(AF_INET, SOCK_STREAM, 0);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(f->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(f->fd, 64), 0);
	getsockname(f->fd, (struct sockaddr *)&a, &len);
	f->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&f->thr, NULL, fake_main, f), 0);
}

static inline void
fake_stop(struct fake *f)
{
	shutdown(f->fd, SHUT_RDWR);
	close(f->fd);
	pthread_join(f->thr, NULL);
}

#endif
