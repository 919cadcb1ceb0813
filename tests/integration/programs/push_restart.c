/* The push across cprof_stop and cprof_start, for
 * tests/integration/push_restart.sh, which runs it where libcurl cannot be
 * loaded: each start says so on stderr and pushes nothing, and the program
 * runs on and exits 0. (The second start once went on without libcurl and
 * called curl_easy_init through a NULL pointer at its first push.) */
#include <cprof.h>
#include <stdio.h>
#include <time.h>

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

int main(void) {
  static const cprof_options_t opts = {
      .addr = "0", .push_url = "http://127.0.0.1:9", .push_interval = "1s"};
  for (int round = 1; round <= 2; round++) {
    int rc = cprof_start(&opts);
    printf("start %d: %d\n", round, rc);
    fflush(stdout);
    sleep_ms(2500); /* past a push's interval */
    cprof_stop();
  }
  printf("done\n");
  return 0;
}
