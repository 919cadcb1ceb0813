/* A C program whose C++ library throws; see throwing.cpp. Exits 7 when all
 * 1000 exceptions were caught. */
#include <stdio.h>

int throw_and_catch(int times);

int main(void) {
  int caught = throw_and_catch(1000);
  printf("caught %d\n", caught);
  return caught == 1000 ? 7 : 1;
}
