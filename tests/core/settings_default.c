/* The program tests/core/settings_doc.sh asks whether a value is a setting's
 * default in the code: settings_default NAME VALUE [CONTEXT=VALUE...] loads
 * the settings twice with cprof__config_load, once with the CONTEXT
 * variables alone (less NAME) and once with NAME=VALUE too, and says whether
 * the two configurations are the same. CONTEXT is what makes NAME read at
 * all (CPROF_PUSH_INTERVAL is read only with a CPROF_PUSH_URL).
 *
 * Exit status: 0 the same (VALUE is the default); 1 they differ; 2 the code
 * refused VALUE (its stderr line says why); 3 NAME was not read; 4 misuse.
 *
 * Linked with --wrap=getenv, so that it sees which variables the settings'
 * loader reads: a default found "the same" for a variable nobody reads
 * would prove nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"

char *__real_getenv(const char *name);

static const char *watched; /* the variable whose reading is looked for */
static int watched_read;

char *__wrap_getenv(const char *name) {
  if (watched && strcmp(name, watched) == 0)
    watched_read = 1;
  return __real_getenv(name);
}

/* Sets the environment to the CONTEXT=VALUE arguments, less skip. */
static int set_context(char **ctx, int n, const char *skip) {
  if (clearenv() != 0)
    return -1;
  for (int i = 0; i < n; i++) {
    const char *eq = strchr(ctx[i], '=');
    if (!eq)
      return -1;
    if (strlen(skip) == (size_t)(eq - ctx[i]) && strncmp(ctx[i], skip, strlen(skip)) == 0)
      continue;
    if (putenv(ctx[i]) != 0)
      return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s NAME VALUE [CONTEXT=VALUE...]\n", argv[0]);
    return 4;
  }
  const char *name = argv[1], *value = argv[2];
  static cprof__config_t base, with; /* big: off the stack */
  if (set_context(argv + 3, argc - 3, name) != 0) {
    fprintf(stderr, "settings_default: bad context\n");
    return 4;
  }
  if (cprof__config_load(NULL, &base) != 0) {
    fprintf(stderr, "settings_default: the context alone is refused\n");
    return 4;
  }
  if (setenv(name, value, 1) != 0)
    return 4;
  watched = name;
  int rc = cprof__config_load(NULL, &with);
  watched = NULL;
  if (!watched_read) {
    printf("%s is not read by cprof__config_load\n", name);
    return 3;
  }
  if (rc != 0) {
    printf("%s=\"%s\" is refused by the code\n", name, value);
    return 2;
  }
  /* cprof__config_load clears the whole struct first, padding included. */
  if (memcmp(&base, &with, sizeof base) != 0) {
    printf("%s=\"%s\" is not the code's default: it changes the settings\n", name, value);
    return 1;
  }
  return 0;
}
