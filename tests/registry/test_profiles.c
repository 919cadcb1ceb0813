/* cprof_profiles, Go's pprof.Profiles(): the built-in profiles and the
 * custom ones, sorted by name, NULL-terminated, with the registry's count
 * and description; every name one cprof_profile_write takes; a list that
 * owns its strings and leaves errno alone. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "cprof.h"
#include "registry/registry.h"

static size_t length(cprof_profile_info_t **list) {
  size_t n = 0;
  while (list[n])
    n++;
  return n;
}

static const cprof_profile_info_t *find(cprof_profile_info_t **list, const char *name) {
  for (size_t i = 0; list[i]; i++)
    if (strcmp(list[i]->name, name) == 0)
      return list[i];
  return NULL;
}

/* The built-ins, sorted by name as Go sorts Profiles(), each described. */
static void test_builtin(void) {
  static const char *const builtin[] = {"allocs", "block",        "goroutine", "heap",
                                        "mutex",  "threadcreate", "wall"};
  errno = EAGAIN;
  cprof_profile_info_t **all = cprof_profiles();
  CHECK(all != NULL);
  if (!all)
    return;
  CHECK_EQ_INT(errno, EAGAIN);
  CHECK_EQ_INT((int)length(all), (int)(sizeof builtin / sizeof builtin[0]));
  for (size_t i = 0; i < sizeof builtin / sizeof builtin[0] && all[i]; i++) {
    CHECK_EQ_STR(all[i]->name, builtin[i]);
    CHECK(all[i]->description[0] != '\0');
    CHECK(all[i]->count >= 0);
  }
  CHECK(find(all, "profile") == NULL); /* the CPU profile is a recording */
  CHECK(find(all, "threads") == NULL); /* goroutine's other name */
  cprof_profiles_free(all);
  cprof_profiles_free(NULL);
}

/* Custom profiles join the list in name order, with their counts now. */
static void test_custom(void) {
  cprof_profile_t *conns = cprof_profile_new("connections", "open connections");
  cprof_profile_t *bare = cprof_profile_new("zz.bare", NULL);
  CHECK(conns != NULL && bare != NULL);
  if (!conns || !bare)
    return;
  int a, b;
  CHECK_EQ_INT(cprof_profile_add(conns, &a, 0), 0);
  CHECK_EQ_INT(cprof_profile_add(conns, &b, 0), 0);

  cprof_profile_info_t **all = cprof_profiles();
  CHECK(all != NULL);
  if (!all)
    return;
  CHECK_EQ_INT((int)length(all), 9);
  for (size_t i = 1; all[i]; i++)
    CHECK(strcmp(all[i - 1]->name, all[i]->name) < 0);
  const cprof_profile_info_t *c = find(all, "connections");
  CHECK(c != NULL);
  if (c) {
    CHECK_EQ_STR(c->description, "open connections");
    CHECK_EQ_INT((int)c->count, 2);
  }
  const cprof_profile_info_t *z = find(all, "zz.bare");
  CHECK(z != NULL);
  if (z) {
    /* The index's line for it, which cprof writes when the program gave none. */
    const cprof__profile_t *p = cprof__registry_lookup("zz.bare");
    CHECK(p != NULL && p->desc != NULL);
    if (p && p->desc)
      CHECK_EQ_STR(z->description, p->desc);
    CHECK_EQ_INT((int)z->count, 0);
  }
  CHECK(all[length(all) - 1] == z); /* last by name */

  /* A snapshot: later changes show in the next list, not in this one. */
  CHECK_EQ_INT(cprof_profile_remove(conns, &a), 0);
  if (c)
    CHECK_EQ_INT((int)c->count, 2);
  cprof_profile_info_t **again = cprof_profiles();
  CHECK(again != NULL);
  if (again) {
    const cprof_profile_info_t *c2 = find(again, "connections");
    CHECK(c2 != NULL && c2->count == 1);
    cprof_profiles_free(again);
  }

  /* Every name in the list is one cprof_profile_write writes, and its
   * count is the registry's (what the index shows). The wall profile, a
   * second's recording, is left out for time. */
  int fd = open("/dev/null", O_WRONLY);
  CHECK(fd >= 0);
  for (size_t i = 0; all[i]; i++) {
    const cprof__profile_t *p = cprof__registry_lookup(all[i]->name);
    CHECK(p != NULL);
    if (strcmp(all[i]->name, "wall") == 0 || strcmp(all[i]->name, "connections") == 0)
      continue;
    if (p)
      CHECK_EQ_INT((int)p->ops->count(p), (int)all[i]->count);
    CHECK_EQ_INT(cprof_profile_write(all[i]->name, fd, 1), 0);
  }
  close(fd);
  cprof_profiles_free(all);
}

int main(void) {
  test_builtin();
  test_custom();
  return check_result("test_profiles");
}
