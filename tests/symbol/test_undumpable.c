/* Names in a process that is not dumpable. Once a process has dropped root
 * (or set PR_SET_DUMPABLE 0), /proc/self/auxv and /proc/self/mem are
 * root's, mode 0400 and 0600 (proc(5)); libdw's dwfl_linux_proc_report
 * reads the first and gave up without a module, and its find_elf reads the
 * vDSO through the second. This process names its own function, libc's
 * getpid and the vDSO's clock_gettime, first as it starts, then (as root
 * only) after dropping to uid 65534 with PR_SET_DUMPABLE 0 and a fresh
 * symbolizer. It drops for good, so it is a test file of its own. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "check.h"
#include "symbol/symbolize.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

__attribute__((noinline, noipa)) static int undumpable_target(int x) { return x * 3 + 1; }

/* The vDSO's clock_gettime, which glibc lists as a loaded object of its own. */
static uintptr_t vdso_clock_gettime(void) {
  void *h = dlopen("linux-vdso.so.1", RTLD_LAZY | RTLD_NOLOAD);
  void *f = h ? dlsym(h, "__vdso_clock_gettime") : NULL;
  return (uintptr_t)f;
}

static int contains(const char *s, const char *part) { return s && strstr(s, part); }

/* Each name, from a symbolizer built now, not one kept from before. */
static void names(const char *when) {
  cprof__symbolizer_trim(0);
  cprof__symbolizer_t *s = cprof__symbolizer_acquire();
  const char *own = cprof__symbolize_name(s, (uintptr_t)&undumpable_target);
  const char *libc = cprof__symbolize_name(s, (uintptr_t)&getpid);
  uintptr_t vdso = vdso_clock_gettime();
  const char *vd = vdso ? cprof__symbolize_name(s, vdso) : NULL;
  fprintf(stderr, "%s: %s, %s, %s\n", when, own ? own : "(none)", libc ? libc : "(none)",
          vd ? vd : "(none)");
  CHECK_EQ_STR(own, "undumpable_target");
  CHECK(contains(libc, "getpid"));
  CHECK(vdso != 0);
  CHECK(contains(vd, "clock_gettime"));

  /* Every mapping has the build ID read from its file (or the vDSO's copy). */
  const cprof__mapping_t *m;
  int n = cprof__symbolizer_mappings(s, &m), with_id = 0;
  for (int i = 0; i < n; i++)
    with_id += m[i].build_id[0] != '\0';
  CHECK(n >= 3);
  CHECK_EQ_INT(with_id, n);
  cprof__symbolizer_release(s);
}

int main(void) {
  names("dumpable");
  if (getuid() != 0) {
    fprintf(stderr, "test_undumpable: not root: the part after a privilege drop is left out\n");
    return check_result("test_undumpable");
  }
  CHECK_EQ_INT(setgid(65534), 0);
  CHECK_EQ_INT(setuid(65534), 0);
  CHECK_EQ_INT(prctl(PR_SET_DUMPABLE, 0), 0);
  /* What libdw's report needs is now out of reach, or this shows nothing. */
  int fd = open("/proc/self/auxv", O_RDONLY | O_CLOEXEC);
  CHECK(fd < 0 && errno == EACCES);
  if (fd >= 0)
    close(fd);
  names("not dumpable, uid 65534");
  return check_result("test_undumpable");
}
