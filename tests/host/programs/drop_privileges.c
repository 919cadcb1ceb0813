/* Drops privileges as setpriv(1) does: keep capabilities across the uid
 * change (PR_SET_KEEPCAPS), setresuid, capset back the capabilities it
 * needs, setresgid, setgroups, then capset to none at all. Each step
 * prints its result. Run as root. Then prints "dropped" and lives one more
 * second, so that the test can read every thread's credentials in /proc.
 *   drop_privileges         glibc's functions for every step
 *   drop_privileges mixed   prctl and capset through syscall(), the ids
 *                           through glibc (which changes every thread)
 *   drop_privileges raw     every step through syscall() (which changes
 *                           the calling thread alone)
 *   drop_privileges vfork   a child made by vfork drops root through
 *                           syscall() and ends; the program keeps it */
#include <grp.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int capset(cap_user_header_t hdr, const cap_user_data_t data); /* glibc's, undeclared */

static int raw_caps, raw_ids;

static int set_caps(unsigned long long caps) {
  struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct d[2] = {{(unsigned)caps, (unsigned)caps, 0},
                                        {(unsigned)(caps >> 32), (unsigned)(caps >> 32), 0}};
  return raw_caps ? (int)syscall(SYS_capset, &h, d) : capset(&h, d);
}

static int keep_caps(void) {
  return raw_caps ? (int)syscall(SYS_prctl, PR_SET_KEEPCAPS, 1L, 0L, 0L, 0L)
                  : prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0);
}

static int set_uid(uid_t u) {
  return raw_ids ? (int)syscall(SYS_setresuid, u, u, u) : setresuid(u, u, u);
}

static int set_gid(gid_t g) {
  return raw_ids ? (int)syscall(SYS_setresgid, g, g, g) : setresgid(g, g, g);
}

static int clear_groups(void) {
  return raw_ids ? (int)syscall(SYS_setgroups, 0L, NULL) : setgroups(0, NULL);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "vfork") == 0) {
    pid_t child = vfork();
    if (child == 0)
      _exit(syscall(SYS_setresuid, 65534L, 65534L, 65534L) == 0 ? 0 : 1);
    int status = 0;
    waitpid(child, &status, 0);
    printf("child dropped: %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    printf("dropped\n");
    fflush(stdout);
    sleep(1);
    return 0;
  }
  raw_caps = strcmp(mode, "mixed") == 0 || strcmp(mode, "raw") == 0;
  raw_ids = strcmp(mode, "raw") == 0;
  printf("keepcaps: %d\n", keep_caps());
  printf("setresuid: %d\n", set_uid(65534));
  printf("capset setgid: %d\n", set_caps(1ull << CAP_SETGID));
  printf("setresgid: %d\n", set_gid(65534));
  printf("setgroups: %d\n", clear_groups());
  printf("capset none: %d\n", set_caps(0));
  printf("dropped\n");
  fflush(stdout);
  sleep(1);
  return 0;
}
