/* Where a cprof command serves HTTP: HOST:PORT, [V6]:PORT or :PORT (the
 * host 127.0.0.1), as cprof web's --http and cprof collect's --listen take
 * it (listen.c). */
#ifndef CPROF_TOOLS_LISTEN_H
#define CPROF_TOOLS_LISTEN_H

#include <stddef.h>
#include <sys/socket.h>

/* spec into an address: 0, or -EINVAL with one line in err naming flag
 * ("--listen") and, in its examples, example_port ("7070"). */
int listen_addr(const char *flag, const char *example_port, const char *spec,
                struct sockaddr_storage *ss, socklen_t *len, char *err, size_t errlen);

#endif
