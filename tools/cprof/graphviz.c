/* Graphviz's libgvc, loaded when first needed (graphviz.h). */
#include "graphviz.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>

static graphviz_t gv;
static int state; /* 0 not tried, 1 loaded, -1 failed */
static char failure[300];

int graphviz_load(const graphviz_t **out, char *err, size_t errlen) {
  if (state == 0) {
    state = -1;
    /* Debian's libgvc6 (Graphviz 2.42 and later keep soname 6). */
    void *h = dlopen("libgvc.so.6", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      snprintf(failure, sizeof failure,
               "Graphviz's libgvc.so.6 is not installed (Debian: apt install libgvc6): %s",
               dlerror());
    } else {
      /* dlsym on libgvc's handle finds libcgraph's agmemread and agclose
       * too: a handle's lookups cover the libraries it depends on. */
      struct {
        void **slot;
        const char *name;
      } syms[] = {{(void **)&gv.context, "gvContext"},
                  {(void **)&gv.read, "agmemread"},
                  {(void **)&gv.layout, "gvLayout"},
                  {(void **)&gv.render, "gvRenderData"},
                  {(void **)&gv.free_render, "gvFreeRenderData"},
                  {(void **)&gv.free_layout, "gvFreeLayout"},
                  {(void **)&gv.close, "agclose"},
                  {(void **)&gv.free_context, "gvFreeContext"}};
      state = 1;
      for (size_t i = 0; i < sizeof syms / sizeof *syms && state > 0; i++)
        if (!(*syms[i].slot = dlsym(h, syms[i].name))) {
          snprintf(failure, sizeof failure, "Graphviz's libgvc.so.6 has no %s", syms[i].name);
          state = -1;
        }
    }
  }
  if (state < 0) {
    snprintf(err, errlen, "%s", failure);
    return -ENOENT;
  }
  *out = &gv;
  return 0;
}
