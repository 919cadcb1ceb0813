/* The embedded HTTP server: libmicrohttpd, a thread per connection, every
 * request handed to cprof_handle_request(). */
#ifndef CPROF_HTTP_SERVER_H
#define CPROF_HTTP_SERVER_H

#include <stddef.h>

#include "core/config.h"

/* Listens on addr and starts serving, from threads in a descriptor table
 * of cprof's own (core/fds.h). On success writes the bound address
 * ("127.0.0.1:6060") into bound. Returns 0 or a negative errno: -ENOTSUP
 * when the kernel refuses that table (said on stderr, with why). */
int cprof__server_start(const cprof__addr_t *addr, char *bound, size_t boundlen);
/* Stops serving and waits for requests in flight. */
void cprof__server_stop(void);
/* The same, but the listening socket is kept: returned as a descriptor in
 * the calling thread's table (close-on-exec), or -1 when it could not be
 * kept (it is then closed). For a caller that is the program's only
 * thread, which no other can see it from, and which hands it to
 * cprof__server_start_on and then closes it. */
int cprof__server_stop_keeping(void);
/* cprof__server_start, listening on kept (from cprof__server_stop_keeping,
 * copied into the server's table; the caller still closes its own) rather
 * than on a new socket; or on a new one when kept is -1 or cannot be
 * copied. */
int cprof__server_start_on(int kept, const cprof__addr_t *addr, char *bound, size_t boundlen);
/* For a member of a process tree (tree/tree.h), before it starts the
 * server: the memory a request leaves free in malloc's arenas is given
 * back to the system a moment after each request (malloc_trim), since one
 * worker of 64 holding a profile's worth of freed heap is 64 of them. */
void cprof__server_frugal(int on);
/* callbacks.c: a request has been answered. */
void cprof__server_request_done(void);

/* In a forked child: the server's threads are gone, and their descriptors
 * were never in the child's table. Forgets them. */
void cprof__server_atfork_prepare(void);
void cprof__server_atfork_parent(void);
void cprof__server_atfork_child(void);

/* For the server's own threads (callbacks.c, accept_retry.c): the
 * keeper's descriptor table, which they share and say they joined
 * (core/fds.h), and whether the server is stopping (a wait of theirs then
 * ends). */
unsigned cprof__server_table(void);
int cprof__server_stopping(void);

#endif
