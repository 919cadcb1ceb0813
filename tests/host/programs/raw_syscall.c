/* syscall() as glibc's: the number and six longs passed through, the
 * result and errno as the kernel gave them. For tests/host/raw_syscall.sh,
 * which runs it with and without cprof's syscall() in front. Prints one
 * line per check and exits 0 when all hold. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int fails;

static void check(const char *what, int ok) {
  printf("%s %s\n", ok ? "ok  " : "FAIL", what);
  fails += !ok;
}

int main(void) {
  check("getpid", syscall(SYS_getpid) == getpid());
  errno = 0;
  check("an unknown number: -1, ENOSYS", syscall(100000) == -1 && errno == ENOSYS);
  errno = 0;
  check("close(-1): -1, EBADF", syscall(SYS_close, -1) == -1 && errno == EBADF);
  errno = 1234;
  check("success leaves errno alone", syscall(SYS_getppid) == getppid() && errno == 1234);
  /* The sixth argument: mmap's offset, from a file with a mark at 4096. */
  int fd = (int)syscall(SYS_memfd_create, "raw", 0L);
  char mark[] = "sixth";
  int ok =
      fd >= 0 && ftruncate(fd, 8192) == 0 && pwrite(fd, mark, sizeof mark, 4096) == sizeof mark;
  char *p = ok ? (char *)syscall(SYS_mmap, NULL, 4096L, (long)PROT_READ, (long)MAP_SHARED, (long)fd,
                                 4096L)
               : MAP_FAILED;
  check("six arguments (mmap at an offset)", p != MAP_FAILED && memcmp(p, mark, sizeof mark) == 0);
  /* The fifth: prctl(PR_SET_MM ...) needs privileges; a five-argument
   * call everyone may make: waitid's rusage pointer, NULL, on no child. */
  errno = 0;
  check("five arguments (waitid on no child: ECHILD)",
        syscall(SYS_waitid, (long)P_ALL, 0L, NULL, (long)WEXITED, NULL) == -1 && errno == ECHILD);
  return fails ? 1 : 0;
}
