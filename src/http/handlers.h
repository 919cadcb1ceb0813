/* The handlers the router (http/routes.c) calls, each with the request's
 * parameters already read (http/params.h): they answer from plain values
 * and call nothing of the router's. */
#ifndef CPROF_HTTP_HANDLERS_H
#define CPROF_HTTP_HANDLERS_H

#include "core/buf.h"
#include "core/config.h"
#include "cprof.h"
#include "http/params.h"

typedef void (*cprof__handler_fn)(const cprof__params_t *p, const cprof__config_t *cfg,
                                  cprof_response_t *resp);

/* /debug/pprof/<name> (src/http/<name>.c). */
void cprof__serve_profile(const cprof__params_t *p, const cprof__config_t *cfg,
                          cprof_response_t *resp);
void cprof__serve_trace(const cprof__params_t *p, const cprof__config_t *cfg,
                        cprof_response_t *resp);
void cprof__serve_wall(const cprof__params_t *p, const cprof__config_t *cfg,
                       cprof_response_t *resp);

/* /debug/pprof/ui/, /ui/profiles and /ui/data (http/ui.c). */
void cprof__serve_ui_page(const cprof__params_t *p, const cprof__config_t *cfg,
                          cprof_response_t *resp);
void cprof__serve_ui_profiles(const cprof__params_t *p, const cprof__config_t *cfg,
                              cprof_response_t *resp);
void cprof__serve_ui_data(const cprof__params_t *p, const cprof__config_t *cfg,
                          cprof_response_t *resp);

/* The CPU profile over seconds into out, as /debug/pprof/profile takes it;
 * 0, or -1 with resp filled with the error (out may hold partial bytes). */
int cprof__cpu_profile_take(const cprof__params_t *p, const cprof__config_t *cfg, long seconds,
                            cprof_response_t *resp, cprof__buf_t *out);
/* The wall-clock profile over seconds at hz (0: the default, 50) into out,
 * as /debug/pprof/wall takes it (with its X-Cprof-Wall header); 0, or -1
 * with resp filled with the error. */
int cprof__wall_take(const cprof__params_t *p, const cprof__config_t *cfg, long seconds, long hz,
                     cprof_response_t *resp, cprof__buf_t *out);

#endif
