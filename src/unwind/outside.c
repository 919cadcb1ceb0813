/* Unwinding a thread blocked in a system call, from outside it.
 *
 * A signal handler that runs while a thread waits in a system call ends
 * many waits with EINTR whatever SA_RESTART says (signal(7)): a sleep ends
 * early, a recv with SO_RCVTIMEO fails, a main thread parked in pause()
 * returns and the program exits. So a thread in any system call, or
 * stopped in the kernel outside one, is never asked for its stack
 * (src/sample/threads.c). The kernel shows where it is, in
 * /proc/self/task/TID/syscall: the stack pointer and the pc (after the
 * syscall instruction, or the faulting one). From those two registers
 * libdw's unwinder walks the stack by the CFI in .eh_frame, the way
 * eu-stack walks another process.
 *
 * Two things differ from walking another process:
 * - Memory is read with process_vm_readv(2) on ourselves, one page at a
 *   time, never by dereferencing: the thread may wake, return and exit while
 *   we read, and its stack may then be unmapped. A read that fails ends the
 *   walk; it cannot fault.
 * - Only sp and pc are known. The C library's frames are described by
 *   their CFI from the stack pointer alone, but code built with frame
 *   pointers computes its frame from %rbp, which the kernel does not show;
 *   a first walk stops there. So we look just above the stack pointer of
 *   the frame where it stopped for a frame record: a saved %rbp pointing
 *   further up the stack beside a return address that follows a call. We
 *   walk again with that as %rbp, and keep the second walk only if it goes
 *   deeper and agrees with the first on every frame they share. */
#include "unwind/outside.h"

#include "arch/arch.h"
#include "unwind/cfa_rule.h"
#include "unwind/frames.h"
#include "unwind/unwind.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* The frame and stack pointers' DWARF numbers (arch/arch.h). */
enum { DWARF_RBP = CPROF_ARCH_DW_FP, DWARF_RSP = CPROF_ARCH_DW_SP };

/* process_vm_readv(2) on ourselves, remembering a refusal: EFAULT is an
 * address that is not mapped (a walk that went past the stack's top, a
 * thread that returned meanwhile); anything else (EPERM from a seccomp
 * filter, ENOSYS) means no memory could be read, and the stack will say so. */
static int read_remote(cprof__blocked_ctx_t *c, void *to, uintptr_t from, size_t len) {
  struct iovec local = {to, len}, remote = {(void *)from, len};
  if (process_vm_readv(c->pid, &local, 1, &remote, 1, 0) == (ssize_t)len)
    return 0;
  if (errno != EFAULT && !c->read_err)
    c->read_err = errno;
  return -1;
}

static int read_word(cprof__blocked_ctx_t *c, uintptr_t addr, uint64_t *out) {
  const size_t size = sizeof c->cache[0].buf;
  uintptr_t page = addr & ~(uintptr_t)(size - 1);
  if (addr - page > size - sizeof *out) /* a word straddling two pages: read it alone */
    return read_remote(c, out, addr, sizeof *out);
  unsigned n = sizeof c->cache / sizeof c->cache[0], i;
  for (i = 0; i < n && c->cache[i].page != page; i++)
    ;
  if (i == n) {
    i = c->next++ % n;
    c->cache[i].page = 0;
    if (read_remote(c, c->cache[i].buf, page, size) != 0)
      return -1;
    c->cache[i].page = page;
  }
  memcpy(out, c->cache[i].buf + (addr - page), sizeof *out);
  return 0;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg) {
  uint64_t v;
  if (read_word(arg, (uintptr_t)addr, &v) != 0)
    return false;
  *result = v;
  return true;
}

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp) {
  return 0; /* we only ever ask for one thread by id */
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp) {
  cprof__blocked_ctx_t *c = arg;
  *thread_argp = c;
  return tid == c->tid;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg) {
  cprof__blocked_ctx_t *c = arg;
  Dwarf_Word sp = c->sp;
  if (!dwfl_thread_state_registers(thread, DWARF_RSP, 1, &sp))
    return false;
  if (c->fp) {
    Dwarf_Word fp = c->fp;
    dwfl_thread_state_registers(thread, DWARF_RBP, 1, &fp);
  }
  dwfl_thread_state_register_pc(thread, c->pc);
  return true;
}

static const Dwfl_Thread_Callbacks callbacks = {
    .next_thread = next_thread,
    .get_thread = get_thread,
    .memory_read = memory_read,
    .set_initial_registers = set_initial_registers,
};

/* Whether pc is in a module the dynamic linker lists (cfa_rule.h). */
static int in_module(uintptr_t pc) {
  cprof__cfa_module_t m;
  return cprof__cfa_module_of(pc, &m);
}

/* Whether ret is a return address: in a module (libdw's, or without a
 * Dwfl the dynamic linker's), just after a call. */
static int after_call(Dwfl *dwfl, cprof__blocked_ctx_t *c, uintptr_t ret) {
  uint64_t w;
  if (ret < 8 || !(dwfl ? dwfl_addrmodule(dwfl, ret) != NULL : in_module(ret)) ||
      read_word(c, ret - 8, &w) != 0)
    return 0;
  unsigned char b[8];
  memcpy(b, &w, sizeof b);
  return cprof__arch_ends_in_call(b);
}

/* A frame record at s: [s] is a higher frame pointer, [s+8] a return
 * address. Returns the saved frame pointer, or 0. */
static uintptr_t frame_record(Dwfl *dwfl, cprof__blocked_ctx_t *c, uintptr_t s) {
  uint64_t next, ret;
  if (read_word(c, s, &next) != 0 || read_word(c, s + 8, &ret) != 0)
    return 0;
  if (next <= s || next - s > (1u << 20) || (next & 7) || !after_call(dwfl, c, ret))
    return 0;
  return next;
}

/* The first frame record at or above sp, within the 64 KiB a frame of
 * ordinary code would not exceed, and short of the end of the stack: the
 * first word that cannot be read ends the search. */
static uintptr_t find_record(Dwfl *dwfl, cprof__blocked_ctx_t *c, uintptr_t sp) {
  for (uintptr_t s = (sp + 7) & ~(uintptr_t)7; s < sp + 64 * 1024; s += 8) {
    uint64_t w;
    if (read_word(c, s + 8, &w) != 0)
      return 0;
    if (frame_record(dwfl, c, s))
      return s;
  }
  return 0;
}

typedef struct collect {
  cprof__frames_t f;
  int bounded;       /* the walk stopped at its bound, with more stack above */
  uintptr_t last_sp; /* the stack pointer of the deepest frame reached */
} collect_t;

static int on_frame(Dwfl_Frame *frame, void *arg) {
  collect_t *k = arg;
  Dwarf_Addr pc;
  bool activation;
  if (!dwfl_frame_pc(frame, &pc, &activation) || pc == 0)
    return DWARF_CB_ABORT;
  Dwarf_Word sp;
  k->last_sp = dwfl_frame_reg(frame, DWARF_RSP, &sp) == 0 ? (uintptr_t)sp : 0;
  /* Our convention wants return addresses after the first frame; an
   * exact pc deeper down (a signal frame) is stored as one. */
  int first = cprof__frames_seen(&k->f) == 0;
  if (!cprof__frames_room(&k->f)) {
    k->bounded = 1;
    return DWARF_CB_ABORT;
  }
  cprof__frames_put(&k->f, !first && activation ? (uintptr_t)pc + 1 : (uintptr_t)pc);
  return DWARF_CB_OK;
}

/* One walk from the registers in ctx by the eh_frame walker's rules
 * (cfa_rule.h, as unwind/cfa.c steps by them in the signal handlers), the
 * stack read with process_vm_readv: the same walk as libdw's below,
 * without libdw. Returns the depth. */
static int cfa_walk(cprof__blocked_ctx_t *c, uintptr_t pc, uintptr_t *pcs, int max, collect_t *k) {
  *k = (collect_t){.bounded = 0};
  cprof__frames_init(&k->f, pcs, max);
  uintptr_t sp = c->sp, bp = c->fp;
  int bp_known = c->fp != 0;
  for (int first = 1;; first = 0) {
    if (!cprof__frames_room(&k->f)) {
      k->bounded = 1;
      break;
    }
    cprof__frames_put(&k->f, pc);
    k->last_sp = sp;
    /* A return address follows its call: the call's rule is the one. */
    uintptr_t start;
    uint64_t rule = cprof__cfa_find_rule(first ? pc : pc - 1, &start), w;
    uintptr_t cfa, off = (uintptr_t)cprof__rule_cfa_off(rule);
    switch (cprof__rule_kind_of(rule)) {
    case CPROF__RULE_FROM_RSP:
      cfa = sp + off;
      break;
    case CPROF__RULE_FROM_RBP:
      if (!bp_known)
        goto done;
      cfa = bp + off;
      break;
    case CPROF__RULE_DEREF_RBP:
      if (!bp_known || read_word(c, bp + off, &w) != 0)
        goto done;
      cfa = (uintptr_t)w;
      break;
    default: /* the outermost frame, or a rule this walker does not follow */
      goto done;
    }
    uint64_t ret;
    /* A return address still in x30 (aarch64) is not known here. */
    if (cprof__rule_ra(rule) != CPROF__RA_AT_CFA || cfa <= sp || (cfa & 7) ||
        cfa - sp > (1u << 24) || read_word(c, cfa + (uintptr_t)cprof__rule_ra_off(rule), &ret) != 0)
      goto done;
    ret = cprof__arch_strip_ra((uintptr_t)ret);
    uintptr_t at = 0;
    switch (cprof__rule_rbp(rule)) {
    case CPROF__RBP_AT_CFA:
      at = cfa + (uintptr_t)cprof__rule_rbp_off(rule);
      break;
    case CPROF__RBP_AT_RBP:
      if (!bp_known)
        goto done;
      at = bp + (uintptr_t)cprof__rule_rbp_off(rule);
      break;
    case CPROF__RBP_SAME:
      break;
    }
    /* A slot below the stack pointer has been popped already (cfa.c's
     * step says why): the register holds what it did. */
    if (at && at >= sp) {
      if (read_word(c, at, &w) != 0)
        goto done;
      bp = (uintptr_t)w;
      bp_known = 1;
    }
    if (ret == 0 || !in_module((uintptr_t)ret))
      goto done;
    pc = (uintptr_t)ret;
    sp = cfa;
  }
done:
  return cprof__frames_end(&k->f, !k->bounded);
}

/* One walk from the registers in ctx; returns the depth. */
static int walk(Dwfl *dwfl, pid_t tid, uintptr_t pc, uintptr_t *pcs, int max, collect_t *k) {
  *k = (collect_t){.bounded = 0};
  cprof__frames_init(&k->f, pcs, max);
  dwfl_getthread_frames(dwfl, tid, on_frame, k);
  if (cprof__frames_seen(&k->f) == 0)
    cprof__frames_add(&k->f, pc);
  return cprof__frames_end(&k->f, !k->bounded);
}

/* The depth of a walk of n frames, with the mark of memory that could not
 * be read after them (pc.h) when a read was refused: a stack that stops
 * there says why instead of looking whole. */
static int mark_unreadable(const cprof__blocked_ctx_t *ctx, uintptr_t *pcs, int n, int max) {
  if (ctx->read_err && n < max)
    pcs[n++] = CPROF_PC_UNREADABLE(ctx->read_err);
  return n;
}

/* The walks from the registers in ctx, by libdw's unwinder (dwfl) or,
 * without it, by ours: the first; then a second with a frame pointer found
 * above where the first stopped, kept if it goes deeper and agrees on the
 * frames both hold. */
static int two_walks(Dwfl *dwfl, cprof__blocked_ctx_t *ctx, uintptr_t pc, uintptr_t *pcs, int max) {
  collect_t first, second;
  int n = dwfl ? walk(dwfl, ctx->tid, pc, pcs, max, &first) : cfa_walk(ctx, pc, pcs, max, &first);
  uintptr_t *again;
  if (first.bounded || !first.last_sp || !(again = malloc((size_t)max * sizeof *again)))
    return mark_unreadable(ctx, pcs, n, max);
  if ((ctx->fp = find_record(dwfl, ctx, first.last_sp)) != 0) {
    for (size_t i = 0; i < sizeof ctx->cache / sizeof ctx->cache[0]; i++)
      ctx->cache[i].page = 0;
    int n2 = dwfl ? walk(dwfl, ctx->tid, pc, again, max, &second)
                  : cfa_walk(ctx, pc, again, max, &second);
    int a = cprof__frames_leading(&first.f), b = cprof__frames_leading(&second.f);
    if (cprof__frames_seen(&second.f) > cprof__frames_seen(&first.f) &&
        memcmp(again, pcs, (size_t)(a < b ? a : b) * sizeof *pcs) == 0) {
      memcpy(pcs, again, (size_t)n2 * sizeof *pcs);
      n = n2;
    }
  }
  free(again);
  return mark_unreadable(ctx, pcs, n, max);
}

int cprof__cfa_unwind_blocked(cprof__blocked_ctx_t *ctx, pid_t tid, uintptr_t sp, uintptr_t pc,
                              uintptr_t *pcs, int max) {
  if (max <= 0)
    return 0;
  *ctx = (cprof__blocked_ctx_t){.tid = tid, .sp = sp, .pc = pc, .pid = getpid()};
  return two_walks(NULL, ctx, pc, pcs, max);
}

int cprof__dwfl_unwind_blocked(Dwfl *dwfl, cprof__blocked_ctx_t *ctx, pid_t tid, uintptr_t sp,
                               uintptr_t pc, uintptr_t *pcs, int max) {
  if (max <= 0)
    return 0;
  pcs[0] = pc;
  if (!dwfl)
    return 1;
  if (!ctx->attached) {
    if (!dwfl_attach_state(dwfl, NULL, getpid(), &callbacks, ctx))
      return 1;
    ctx->attached = 1;
  }
  ctx->tid = tid;
  ctx->sp = sp;
  ctx->pc = pc;
  ctx->fp = 0;
  ctx->pid = getpid();
  ctx->read_err = 0;
  /* The stack changes between walks; cached pages are only good for one. */
  for (size_t i = 0; i < sizeof ctx->cache / sizeof ctx->cache[0]; i++)
    ctx->cache[i].page = 0;
  return two_walks(dwfl, ctx, pc, pcs, max);
}
