/* A thread, and a coroutine on a heap stack (makecontext(3)), each busy in
 * CPU with only ROOM bytes of its stack left below it, a guard page under
 * that: less than any x86-64 CPU's signal frame (the kernel's figure,
 * getauxval(AT_MINSIGSTKSZ), is checked to be larger). A signal handled on
 * that stack faults in the guard page and ends the program; one handled
 * on an alternate signal stack does not. And a thread made by clone(2)
 * directly, which a preloaded library cannot see start, the same way, for
 * longer (a profiler finds such threads by looking at /proc/self/task).
 * Prints each one's sum, the same with cprof and without.
 *
 *   tiny_room [ITERATIONS]   (per turn, default 20 million; 8 turns each,
 *                             24 for the clone's thread) */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clone */
#endif
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>

#define ROOM 384         /* bytes left below the spinning frame */
#define STACK (64 << 10) /* each stack, above its guard page */
#define GUARD 4096
#define TURNS 8

static long iterations = 20000000;
static char *thread_lo, *coroutine_lo; /* the lowest usable byte of each stack */
static uint64_t thread_sum, coroutine_sum;
static int thread_room, coroutine_room; /* the room measured, as a check */
static ucontext_t main_ctx, co_ctx;
static char *clone_lo;
static uint64_t clone_sum;
static int clone_room, clone_done;

/* The CPU, with no call and no frame to speak of: ROOM bytes above the
 * guard page. */
__attribute__((noinline)) static uint64_t spin_tiny(uint64_t x, const char *lo, int *room) {
  char here;
  *room = (int)(&here - lo);
  for (long i = 0; i < iterations; i++)
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  __asm__ volatile("" : "+r"(x));
  return x;
}

/* Spends all but ROOM bytes of the stack in one alloca, then spins below
 * it. alloca, not an array: the size is what is left here, known only at
 * run time. */
__attribute__((noinline)) static uint64_t spin_low(uint64_t x, const char *lo, int *room) {
  char here;
  long pad = (&here - lo) - ROOM - 40; /* 40: about what spin_tiny's frame lies below here */
  volatile char *p = __builtin_alloca(pad > 0 ? pad : 1);
  p[0] = 0;
  x = spin_tiny(x, lo, room);
  return x + (uint64_t)p[0];
}

static void *thread_main(void *arg) {
  (void)arg;
  for (int t = 0; t < TURNS; t++)
    thread_sum = spin_low(thread_sum + (uint64_t)t, thread_lo, &thread_room);
  return NULL;
}

static void coroutine_main(void) {
  for (int t = 0; t < TURNS; t++) {
    coroutine_sum = spin_low(coroutine_sum + (uint64_t)t + 1, coroutine_lo, &coroutine_room);
    swapcontext(&co_ctx, &main_ctx);
  }
}

/* The clone's thread shares the main thread's TLS (no CLONE_SETTLS): it
 * calls nothing of libc's, and ends with the exit system call itself. */
static int clone_main(void *arg) {
  for (int t = 0; t < 3 * TURNS; t++)
    clone_sum = spin_low(clone_sum + (uint64_t)t + 2, clone_lo, &clone_room);
  __atomic_store_n(&clone_done, 1, __ATOMIC_RELEASE);
  __asm__ volatile("syscall" : : "a"(60 /* SYS_exit */), "D"(0) : "rcx", "r11", "memory");
  __builtin_unreachable();
}

/* A stack of STACK bytes above a guard page; returns its lowest byte. */
static char *guarded_stack(void) {
  char *m = mmap(NULL, STACK + GUARD, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED || mprotect(m, GUARD, PROT_NONE) != 0)
    abort();
  return m + GUARD;
}

/* The room left: within 64 bytes of ROOM, whatever the compiler made of
 * the two frames. */
static const char *room_ok(int room) {
  if (getenv("TINY_ROOM_SHOW"))
    fprintf(stderr, "room %d\n", room);
  return room >= ROOM - 64 && room <= ROOM + 64 ? "ok" : "off";
}

int main(int argc, char **argv) {
  if (argc > 1)
    iterations = atol(argv[1]);
  unsigned long frame = getauxval(AT_MINSIGSTKSZ);
  printf("signal frame larger than the room: %s\n", frame == 0 || frame > ROOM + 64 ? "yes" : "no");
  fflush(stdout);

  thread_lo = guarded_stack();
  pthread_attr_t a;
  pthread_attr_init(&a);
  if (pthread_attr_setstack(&a, thread_lo, STACK) != 0)
    return 1;
  pthread_t th;
  if (pthread_create(&th, &a, thread_main, NULL) != 0)
    return 1;

  clone_lo = guarded_stack();
  if (clone(clone_main, clone_lo + STACK - 64,
            CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM,
            NULL) < 0)
    return 1;

  coroutine_lo = guarded_stack();
  getcontext(&co_ctx);
  co_ctx.uc_stack.ss_sp = coroutine_lo;
  co_ctx.uc_stack.ss_size = STACK;
  co_ctx.uc_link = &main_ctx;
  makecontext(&co_ctx, coroutine_main, 0);
  for (volatile int t = 0; t < TURNS + 1; t++) /* volatile: swapcontext returns twice */
    swapcontext(&main_ctx, &co_ctx);

  pthread_join(th, NULL);
  while (!__atomic_load_n(&clone_done, __ATOMIC_ACQUIRE)) {
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  printf("thread: %016llx, room %s\n", (unsigned long long)thread_sum, room_ok(thread_room));
  printf("coroutine: %016llx, room %s\n", (unsigned long long)coroutine_sum,
         room_ok(coroutine_room));
  printf("clone's thread: %016llx, room %s\n", (unsigned long long)clone_sum, room_ok(clone_room));
  return 0;
}
