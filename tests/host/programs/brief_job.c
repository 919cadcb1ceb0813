/* A short job: sleeps argv[1] milliseconds (default 1500), says so with
 * its output flushed, and returns from main. What follows its last line is
 * exit's own work: the time from that line to the process's end is how
 * long exit took (tests/host/outage.sh). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv) {
  long ms = argc > 1 ? atol(argv[1]) : 1500;
  puts("ready");
  fflush(stdout);
  struct timespec ts = {ms / 1000, ms % 1000 * 1000000L};
  while (nanosleep(&ts, &ts) != 0)
    ;
  puts("done");
  fflush(stdout);
  return 0;
}
