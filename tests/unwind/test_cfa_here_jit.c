/* The walk from here (the heap and contention profiles' walk, cfa.h and
 * caller.h) over code with no unwind tables, made at run time as a JIT
 * makes it: a stub in an anonymous executable page that calls back into
 * compiled code. Where the stub keeps a frame pointer, one checked
 * frame-pointer step gets past it, and the stack goes on to the stub's
 * caller and its callers, as the stub's caller's own walk has them. Where
 * it does not (its %rbp is a small number), the stack ends at the stub
 * with CPROF_PC_STACK_CUT: cut, and saying so. (Before, both ended at the
 * stub's address, with nothing to say the stack went on.) */
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "unwind/bounds.h"
#include "unwind/caller.h"
#include "unwind/cfa.h"
#include "unwind/pc.h"

#define MAX 128

#if defined(__aarch64__)
/* stp x29, x30, [sp, #-16]!; mov x29, sp; blr x0; ldp x29, x30, [sp], #16; ret */
static const uint32_t framed_w[] = {0xa9bf7bfd, 0x910003fd, 0xd63f0000, 0xa8c17bfd, 0xd65f03c0};
/* stp x29, x30, [sp, #-16]!; mov x29, #0x1234; blr x0; ldp x29, x30, [sp], #16; ret */
static const uint32_t lost_w[] = {0xa9bf7bfd, 0xd282469d, 0xd63f0000, 0xa8c17bfd, 0xd65f03c0};
#define framed ((const unsigned char *)framed_w)
#define lost ((const unsigned char *)lost_w)
#define FRAMED_SIZE sizeof framed_w
#define LOST_SIZE sizeof lost_w
#else
/* push %rbp; mov %rsp,%rbp; call *%rdi; pop %rbp; ret */
static const unsigned char framed[] = {0x55, 0x48, 0x89, 0xe5, 0xff, 0xd7, 0x5d, 0xc3};
/* push %rbp; mov $0x1234,%rbp; call *%rdi; pop %rbp; ret */
static const unsigned char lost[] = {0x55, 0x48, 0xc7, 0xc5, 0x34, 0x12,
                                     0x00, 0x00, 0xff, 0xd7, 0x5d, 0xc3};
#define FRAMED_SIZE sizeof framed
#define LOST_SIZE sizeof lost
#endif

static unsigned char *page;
static uintptr_t ref[MAX], here[MAX], caller[MAX];
static int ref_n, here_n, caller_n;

/* Called by the stub: both walks from here. */
__attribute__((noinline)) static void callee(void) {
  here_n = cprof__unwind_cfa_here(here, MAX, 0, cprof__stack_hi(), NULL);
  caller_n =
      cprof__unwind_caller(CPROF_UNWIND_DWARF, caller, MAX, (uintptr_t)__builtin_return_address(0));
  __asm__ volatile("" ::: "memory");
}

/* The stub's caller: its own walk, then the call into the stub. */
__attribute__((noinline)) static void call_stub(void) {
  ref_n = cprof__unwind_cfa_here(ref, MAX, 0, cprof__stack_hi(), NULL);
  ((void (*)(void (*)(void)))page)(callee);
  __asm__ volatile("" ::: "memory");
}

static int in_call_stub(uintptr_t ret) {
  return ret > (uintptr_t)call_stub && ret - (uintptr_t)call_stub < 256;
}
static int in_page(uintptr_t ret) { return ret > (uintptr_t)page && ret <= (uintptr_t)page + 64; }

static void run(const unsigned char *code, size_t size) {
  mprotect(page, 4096, PROT_READ | PROT_WRITE);
  memcpy(page, code, size);
  __builtin___clear_cache((char *)page, (char *)page + size); /* aarch64's caches */
  mprotect(page, 4096, PROT_READ | PROT_EXEC);
  here_n = caller_n = ref_n = 0;
  call_stub();
}

int main(void) {
  cprof__stack_bounds_learn();
  page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(page != MAP_FAILED);
  if (page == MAP_FAILED)
    return check_result("test_cfa_here_jit");

  /* A stub with a frame: [in callee, in the stub, in call_stub, callers...];
   * the heap sampler's: [in the stub, in call_stub, callers...]. */
  run(framed, FRAMED_SIZE);
  fprintf(stderr,
          "framed stub: the walk from here has %d frames, the caller's walk %d, "
          "call_stub's own %d\n",
          here_n, caller_n, ref_n);
  CHECK(ref_n >= 3);
  CHECK(here_n == ref_n + 2 && in_page(here[1]) && in_call_stub(here[2]) &&
        memcmp(&here[3], &ref[1], (size_t)(ref_n - 1) * sizeof *ref) == 0);
  CHECK(caller_n == ref_n + 1 && in_page(caller[0] + 1) && in_call_stub(caller[1]) &&
        memcmp(&caller[2], &ref[1], (size_t)(ref_n - 1) * sizeof *ref) == 0);
  CHECK(here[here_n - 1] != CPROF_PC_STACK_CUT);

  /* A stub whose frame neither the tables nor its frame pointer explain. */
  run(lost, LOST_SIZE);
  fprintf(stderr, "lost stub: %d and %d frames\n", here_n, caller_n);
  CHECK(here_n == 3 && in_page(here[1]) && here[2] == CPROF_PC_STACK_CUT);
  CHECK(caller_n == 2 && in_page(caller[0] + 1) && caller[1] == CPROF_PC_STACK_CUT);

  munmap(page, 4096);
  return check_result("test_cfa_here_jit");
}
