/* libmicrohttpd's callbacks for the embedded server (server.c starts the
 * daemon with them): a connection opened and closed (limits.c's records),
 * a request's raw URI, its headers (admitted or told 503), its body and its
 * answer from cprof_handle_request(), and its end. They run on the
 * daemon's threads, in the server's descriptor table. */
#ifndef CPROF_HTTP_CALLBACKS_H
#define CPROF_HTTP_CALLBACKS_H

#include <microhttpd.h>
#include <stddef.h>

/* The daemon speaks TLS: set before it starts, read by its threads. */
extern int cprof__mhd_tls;

/* MHD_OPTION_URI_LOG_CALLBACK: the request's state, with its raw URI. */
void *cprof__mhd_uri_log(void *cls, const char *uri, struct MHD_Connection *con);
/* MHD_start_daemon's access handler: every call of a request. */
enum MHD_Result cprof__mhd_request(void *cls, struct MHD_Connection *con, const char *url,
                                   const char *method, const char *version, const char *upload_data,
                                   size_t *upload_data_size, void **con_cls);
/* MHD_OPTION_NOTIFY_COMPLETED: the request's state goes. */
void cprof__mhd_completed(void *cls, struct MHD_Connection *con, void **con_cls,
                          enum MHD_RequestTerminationCode toe);

/* The limits' options for MHD_start_daemon (an MHD_OPTION_ARRAY of
 * CPROF_MHD_LIMIT_OPTIONS items), from the settings in force; also sets
 * limits.c's caps, with wake for its request deadlines. */
#define CPROF_MHD_LIMIT_OPTIONS 5
void cprof__mhd_limit_options(struct MHD_OptionItem *o, int tls, void (*wake)(void));

#endif
