/* Graphviz's libgvc, loaded when cprof graph first lays a graph out
 * (dlopen, as the library loads libcurl): the command builds without
 * Graphviz's headers, so that it cross-builds for arm64 on Debian 12,
 * whose libgraphviz-dev cannot be installed for a second architecture,
 * and a machine without Graphviz gets one line saying what is missing
 * when it asks for a drawing, not a command that will not start. Its
 * graphs and contexts are opaque here. */
#ifndef CPROF_CLI_GRAPHVIZ_H
#define CPROF_CLI_GRAPHVIZ_H

#include <stddef.h>

typedef struct graphviz {
  void *(*context)(void);         /* gvContext */
  void *(*read)(const char *dot); /* agmemread (libcgraph, libgvc's own dependency) */
  int (*layout)(void *gvc, void *g, const char *engine);
  int (*render)(void *gvc, void *g, const char *format, char **data, unsigned int *len);
  void (*free_render)(char *data);        /* gvFreeRenderData */
  int (*free_layout)(void *gvc, void *g); /* gvFreeLayout */
  int (*close)(void *g);                  /* agclose */
  int (*free_context)(void *gvc);         /* gvFreeContext */
} graphviz_t;

/* Graphviz's functions, loaded the first time: 0 with *out set, or
 * -ENOENT with one line in err ("Graphviz's libgvc.so.6 is not installed
 * ..."). */
int graphviz_load(const graphviz_t **out, char *err, size_t errlen);

#endif
