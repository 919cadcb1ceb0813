/* Coroutines on small heap stacks (makecontext(3)/swapcontext(3)), each
 * using most of its stack and busy in CPU there, switched round-robin by
 * main: a profiler's signal lands on stacks that are neither a thread's
 * nor an alternate signal stack. Prints each coroutine's sum: the same
 * with cprof and without.
 *
 *   coroutines [ITERATIONS]   (per turn, default 2 million; 4 x 40 turns) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#define COROUTINES 4
#define TURNS 40
#define STACK 12288 /* 12 KiB, of which each coroutine holds 8.5 */

static long iterations = 2000000;
static ucontext_t main_ctx, ctx[COROUTINES];
static uint64_t sums[COROUTINES];

__attribute__((noinline)) static uint64_t spin(volatile char *buf, uint64_t x) {
  x += (uint64_t)buf[0];
  for (long i = 0; i < iterations; i++)
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  return x;
}

static void body(int k) {
  volatile char buf[8704];
  for (int i = 0; i < (int)sizeof buf; i += 64)
    buf[i] = (char)(i + k);
  for (int t = 0; t < TURNS; t++) {
    sums[k] = spin(buf, sums[k]);
    swapcontext(&ctx[k], &main_ctx);
  }
}

int main(int argc, char **argv) {
  if (argc > 1)
    iterations = atol(argv[1]);
  for (volatile int k = 0; k < COROUTINES; k++) { /* volatile: getcontext returns twice */
    getcontext(&ctx[k]);
    ctx[k].uc_stack.ss_sp = malloc(STACK);
    ctx[k].uc_stack.ss_size = STACK;
    ctx[k].uc_link = &main_ctx;
    if (!ctx[k].uc_stack.ss_sp)
      return 1;
    makecontext(&ctx[k], (void (*)(void))body, 1, k);
  }
  for (volatile int t = 0; t < TURNS + 1; t++) /* volatile: swapcontext returns twice */
    for (volatile int k = 0; k < COROUTINES; k++)
      swapcontext(&main_ctx, &ctx[k]);
  for (int k = 0; k < COROUTINES; k++)
    printf("coroutine %d: %016llx\n", k, (unsigned long long)sums[k]);
  return 0;
}
