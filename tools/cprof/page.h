/* The viewer page (src/ui/viewer.h) for a profile, as the flame, diff
 * --flame, web and prompt commands make it. */
#ifndef CPROF_TOOLS_PAGE_H
#define CPROF_TOOLS_PAGE_H

#include "core/buf.h"
#include "model/model.h"

/* Appends the page for p, or for NEW p against base when base is not NULL
 * (the diff view: red grew, blue shrank). 0 or a negative errno. */
int page_build(const cprof__pf_t *p, const cprof__pf_t *base, cprof__buf_t *out);

#endif
