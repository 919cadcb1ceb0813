// cprof-host: -fno-optimize-sibling-calls -fno-inline
/* Code with no unwind tables between the program's frames, as a JIT makes
 * it: main -> call_through_jit -> a stub copied into an anonymous
 * executable page -> in_jit_callee, which, by argv[1], burns CPU ("cpu"),
 * allocates and keeps 1000 blocks of 1000 bytes ("heap"), or sleeps
 * ("sleep"), for argv[2] seconds (heap: then sleeps). The stub is what a
 * JIT's code looks like to an unwinder: a frame-pointer frame and an
 * indirect call, and nothing in any module's tables:
 *
 *   55        push %rbp
 *   48 89 e5  mov  %rsp,%rbp
 *   ff d7     call *%rdi
 *   5d        pop  %rbp
 *   c3        ret
 *
 * (tests/host/stack_depth.sh). Prints "ready" once in the callee. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static const char *mode;
static int seconds;
static void *volatile kept[1000];

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void in_jit_callee(void) {
  if (strcmp(mode, "heap") == 0)
    for (int i = 0; i < 1000; i++) {
      kept[i] = malloc(1000);
      memset(kept[i], i, 1000);
    }
  puts("ready");
  fflush(stdout);
  if (strcmp(mode, "cpu") == 0) {
    volatile unsigned x = 1;
    for (double end = now() + seconds; now() < end;)
      for (int i = 0; i < 100000; i++)
        x = x * 2654435761u + 1;
  } else {
    struct timespec ts = {seconds, 0};
    nanosleep(&ts, NULL);
  }
}

typedef void (*stub_fn)(void (*)(void));

__attribute__((noinline)) static int call_through_jit(stub_fn stub) {
  stub(in_jit_callee);
  return 1; /* work after the call: no tail call */
}

int main(int argc, char **argv) {
  static const unsigned char code[] = {0x55, 0x48, 0x89, 0xe5, 0xff, 0xd7, 0x5d, 0xc3};
  mode = argc > 1 ? argv[1] : "cpu";
  seconds = argc > 2 ? atoi(argv[2]) : 2;
  void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED)
    return 2;
  memcpy(page, code, sizeof code);
  if (mprotect(page, 4096, PROT_READ | PROT_EXEC) != 0)
    return 2;
  return call_through_jit((stub_fn)page) == 1 ? 0 : 1;
}
