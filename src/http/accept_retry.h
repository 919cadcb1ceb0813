/* When the embedded server cannot accept for want of descriptors or of
 * kernel memory: libmicrohttpd's listening thread is made to wait between
 * its tries, and one stderr line says so (accept_retry.c says why). */
#ifndef CPROF_HTTP_ACCEPT_RETRY_H
#define CPROF_HTTP_ACCEPT_RETRY_H

/* Before the server starts: no episode, no line said. */
void cprof__accept_retry_init(void);
/* A connection was accepted: the next failure is a new episode, and a line
 * that could not be written is written now. */
void cprof__accept_worked(void);
/* libmicrohttpd's listening thread could not accept (its error log said
 * so). first: no connection was open, and libmicrohttpd will try again at
 * once; the call waits before it may. */
void cprof__accept_failed(int first);
/* The keeper is stopping the daemon: a wait of cprof__accept_failed ends
 * now. */
void cprof__accept_retry_stop(void);

#endif
