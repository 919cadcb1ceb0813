/* Drops privileges as setpriv(1) does: keep capabilities across the uid
 * change (PR_SET_KEEPCAPS), setresuid, capset back the capabilities it
 * needs, setresgid, then capset to none at all. Each step prints its
 * result. Run as root. Then prints "dropped" and lives one more second,
 * so that the test can read every thread's capabilities in /proc. */
#include <linux/capability.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int capset(cap_user_header_t hdr, const cap_user_data_t data); /* glibc's, undeclared */

static int set_caps(unsigned long long caps) {
  struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct d[2] = {{(unsigned)caps, (unsigned)caps, 0},
                                        {(unsigned)(caps >> 32), (unsigned)(caps >> 32), 0}};
  return capset(&h, d);
}

int main(void) {
  printf("keepcaps: %d\n", prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0));
  printf("setresuid: %d\n", setresuid(65534, 65534, 65534));
  printf("capset setgid: %d\n", set_caps(1ull << CAP_SETGID));
  printf("setresgid: %d\n", setresgid(65534, 65534, 65534));
  printf("capset none: %d\n", set_caps(0));
  printf("dropped\n");
  fflush(stdout);
  sleep(1);
  return 0;
}
