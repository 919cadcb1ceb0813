/* The simplest host: prints, exits 0. host.sh's smoke test of the harness. */
#include <stdio.h>
int main(void) {
  puts("hello");
  return 0;
}
