/* Loads libunloaded_a.so, allocates 123,456 bytes in it and keeps them,
 * then alternates half a second of CPU in A and in B
 * (libunloaded_b.so), each loaded in turn at the same address and closed
 * again; ends with B loaded where A was. So every sample of A's was taken
 * in a module that is gone when the profile is written, at an address
 * where B is now. Prints "same address" when B did land where A was (the
 * test means nothing otherwise). Usage: unloaded LIBDIR [--wait]: with
 * --wait, prints "ready" at the end and waits to be killed, for a test to
 * fetch profiles from its server. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *open_lib(const char *dir, const char *name, void **base) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  void *h = dlopen(path, RTLD_NOW);
  if (!h) {
    fprintf(stderr, "unloaded: %s\n", dlerror());
    exit(2);
  }
  Dl_info info;
  void *any = dlsym(h, "a_spin") ? dlsym(h, "a_spin") : dlsym(h, "b_spin");
  *base = any && dladdr(any, &info) ? info.dli_fbase : NULL;
  return h;
}

int main(int argc, char **argv) {
  if (argc < 2)
    return 2;
  void *keep = NULL, *base_a, *base_b;
  int same = 1;
  for (int round = 0; round < 3; round++) {
    void *a = open_lib(argv[1], "libunloaded_a.so", &base_a);
    if (round == 0)
      keep = ((void *(*)(size_t))dlsym(a, "a_alloc_func"))(123456);
    ((double (*)(double))dlsym(a, "a_spin"))(0.5);
    dlclose(a);
    void *b = open_lib(argv[1], "libunloaded_b.so", &base_b);
    ((void *(*)(size_t))dlsym(b, "b_other_func"))(7);
    ((double (*)(double))dlsym(b, "b_spin"))(0.5);
    same &= base_a == base_b;
    if (getenv("UNLOADED_VERBOSE"))
      fprintf(stderr, "round %d: A at %p, B at %p\n", round, base_a, base_b);
    if (round < 2)
      dlclose(b);
  }
  printf("%s (A at %p, B at %p), kept %p\n", same ? "same address" : "different addresses", base_a,
         base_b, keep != NULL ? (void *)1 : NULL);
  if (argc > 2 && strcmp(argv[2], "--wait") == 0) {
    printf("ready\n");
    fflush(stdout);
    for (;;)
      pause();
  }
  return 0;
}
