/* The embedded server's listening socket: opened here rather than by
 * libmicrohttpd, and kept across a restart of the server. */
#ifndef CPROF_HTTP_LISTENER_H
#define CPROF_HTTP_LISTENER_H

#include <stddef.h>

#include "core/config.h"

/* Creates, binds and listens on a; fills bound ("127.0.0.1:6060"). Returns
 * the fd or a negative errno. */
int cprof__listener_open(const cprof__addr_t *a, char *bound, size_t boundlen);
/* The listening socket cprof__server_stop_keeping kept, numbered fd in the
 * program's table, copied into the caller's; fills bound. Returns the
 * copy, or -1 to listen anew. */
int cprof__listener_adopt(int fd, const cprof__addr_t *addr, char *bound, size_t boundlen);
/* Sends listener, in the caller's table, through the socket numbered to in
 * the program's table (one end of a socket pair). */
void cprof__listener_hand_over(int listener, int to);
/* Receives the listener sent so on from (the pair's other end, in the
 * caller's table), close-on-exec, without waiting. Returns it or -1. */
int cprof__listener_take_back(int from);

#endif
