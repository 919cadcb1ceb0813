/* The cached DWARF unwinder (see cfa.h): the heap sampler's walk from
 * its own frames, and the signal handlers' walk from an interrupted
 * context.
 *
 * For a pc, the rule comes from the module's unwind tables (eh_frame.c
 * reads them), and is kept in a cache by pc; each step applies one. */
#include "unwind/cfa.h"

#include <stddef.h>
#include <string.h>

#include "arch/arch.h"
#include "unwind/bounds.h"
#include "unwind/cfa_rule.h"
#include "unwind/frames.h"
#include "unwind/pc.h"
#include "unwind/unload.h"
#include "unwind/unwind.h"

/* ---- the cache ----
 *
 * Direct-mapped, each slot guarded by a sequence number: odd while a writer
 * fills it. A reader that sees it odd, or changed across its reads, treats
 * the slot as a miss; a writer that finds it odd leaves it to the other. So
 * nobody waits, and a fork in the middle of a write costs only that slot.
 *
 * A slot's key is the pc tagged with the generation of unloads
 * (unload.h): after a dlclose, rules of the pcs of whatever it unmapped
 * miss, and a library loaded at the same addresses later gets its own. */

#define CACHE_BITS 12

typedef struct slot {
  uint32_t seq;
  uint64_t key; /* pc | cprof__unload_tag() */
  uint64_t rule;
} slot_t;

static slot_t cache[1 << CACHE_BITS];

static slot_t *slot_of(uintptr_t pc) {
  return &cache[(pc * 0x9e3779b97f4a7c15ull) >> (64 - CACHE_BITS)];
}

/* A miss: the rule from the tables, kept in the slot unless a writer (on
 * another thread, or the code this handler interrupted) has it. */
__attribute__((noinline)) static uint64_t rule_missed(uintptr_t pc, uint64_t key, slot_t *s,
                                                      uint32_t seq) {
  uint64_t rule = cprof__cfa_find_rule(pc, NULL);
  if (!(seq & 1) &&
      __atomic_compare_exchange_n(&s->seq, &seq, seq + 1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&s->key, key, __ATOMIC_RELAXED);
    __atomic_store_n(&s->rule, rule, __ATOMIC_RELAXED);
    __atomic_store_n(&s->seq, seq + 2, __ATOMIC_RELEASE);
  }
  return rule;
}

/* Inlined in the walks: a hit is a probe of one slot. `tag` is
 * cprof__unload_tag(), read once per walk. */
static inline __attribute__((always_inline)) uint64_t rule_of(uintptr_t pc, uint64_t tag) {
  slot_t *s = slot_of(pc);
  uint64_t want = pc | tag;
  uint32_t seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
  if (__builtin_expect(!(seq & 1), 1)) {
    uint64_t key = __atomic_load_n(&s->key, __ATOMIC_RELAXED);
    uint64_t rule = __atomic_load_n(&s->rule, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__builtin_expect(key == want, 1) && __atomic_load_n(&s->seq, __ATOMIC_RELAXED) == seq)
      return rule;
  }
  return rule_missed(pc, want, s, seq);
}

/* ---- one step ---- */

typedef struct regs {
  uintptr_t pc, sp, bp;
} regs_t;

/* A word of the stack, if all of it lies in [lo, hi) and it is aligned. */
CPROF_READS_STACK static inline __attribute__((always_inline)) int
peek(uintptr_t at, uintptr_t lo, uintptr_t hi, uintptr_t *out) {
  if (at < lo || at > hi - 8 || hi < 8 || (at & 7))
    return 0;
  *out = *(const uintptr_t *)at;
  return 1;
}

/* Steps from the frame `r` to its caller with the frame's rule, reading only
 * in [r->sp, hi): the caller's pc (a return address, its PAC bits stripped:
 * arch.h), sp and frame pointer. `g` is every register of the frame, where
 * known (a frame a signal interrupted), else NULL: on aarch64 the return
 * address of a frame whose rule says it is still in x30 is known only
 * there. 0 when the rule is not one to step with, or would read out of
 * bounds: each frame lies above the last and below the stack's top. */
CPROF_READS_STACK static inline __attribute__((always_inline)) int
step(uint64_t rule, regs_t *r, uintptr_t hi, const mcontext_t *g) {
  uintptr_t cfa, ret, at = 0, bp = r->bp;
  switch (cprof__rule_kind_of(rule)) {
  case CPROF__RULE_FROM_RSP:
    cfa = r->sp + (uintptr_t)cprof__rule_cfa_off(rule);
    break;
  case CPROF__RULE_FROM_RBP:
    cfa = r->bp + (uintptr_t)cprof__rule_cfa_off(rule);
    break;
  case CPROF__RULE_FROM_REG:
    if (!g || cprof__rule_reg(rule) >= CPROF_ARCH_DW_REGS)
      return 0;
    cfa = cprof__arch_dwarf_reg(g, cprof__rule_reg(rule)) + (uintptr_t)cprof__rule_cfa_off(rule);
    break;
  case CPROF__RULE_DEREF_RBP:
    if (!peek(r->bp + (uintptr_t)cprof__rule_cfa_off(rule), r->sp, hi, &cfa))
      return 0;
    break;
  default:
    return 0;
  }
  /* Each frame lies above the last, but for an aarch64 frame that has
   * saved nothing yet (a leaf: its return address is in x30): its caller
   * has its stack pointer, and returns to where it was called from. */
  int in_lr = cprof__rule_ra(rule) == CPROF__RA_IN_LR;
  if (cfa < r->sp || (cfa == r->sp && !in_lr) || cfa > hi || (cfa & 7))
    return 0;
  if (in_lr) { /* aarch64: not saved yet */
    if (!g)
      return 0;
    ret = cprof__arch_dwarf_reg(g, CPROF_ARCH_DW_RA);
  } else if (cprof__rule_ra_off(rule) == -8) { /* x86-64's only rule, and aarch64's commonest */
    ret = ((const uintptr_t *)cfa)[-1];
  } else if (!peek(cfa + (uintptr_t)cprof__rule_ra_off(rule), r->sp, hi, &ret)) {
    return 0;
  }
  ret = cprof__arch_strip_ra(ret);
  switch (cprof__rule_rbp(rule)) {
  case CPROF__RBP_AT_CFA:
    at = cfa + (uintptr_t)cprof__rule_rbp_off(rule);
    break;
  case CPROF__RBP_AT_RBP:
    at = r->bp + (uintptr_t)cprof__rule_rbp_off(rule);
    break;
  case CPROF__RBP_SAME:
    break;
  }
  /* A save slot below the stack pointer has been popped already: an
   * epilogue's CFI moves the CFA as it pops but does not say the register
   * is back (GCC writes no DW_CFA_restore there), and the register holds
   * what the slot did. */
  if (at >= r->sp && !peek(at, r->sp, hi, &bp))
    return 0;
  *r = (regs_t){ret, cfa, bp};
  return 1;
}

/* ---- the walk from here (the heap sampler's) ---- */

static int is_return_address(uintptr_t ret);
static int fp_step(regs_t *r, uintptr_t hi);
#if !CPROF_ARCH_SIGRETURN_NEEDS_FDE
static const ucontext_t *sigframe_by_stack(const regs_t *r, uintptr_t hi);
#endif

/* The checked fallbacks of the handlers' walk (below), for the walk from
 * here. Its ordinary steps read only the code and tables of its own live
 * frames, which no dlclose may unmap; a fallback reads code where a word
 * of the stack points, which may be a library closed since: counted in
 * against dlclose for that read, as the handlers' walk is (unload.h). */
static int return_address_here(uintptr_t ret) {
  unsigned e = cprof__unload_enter_sigsafe();
  int ok = !cprof__unload_busy_sigsafe() && is_return_address(ret);
  cprof__unload_leave_sigsafe(e);
  return ok;
}

CPROF_READS_STACK static int fp_step_here(regs_t *r, uintptr_t hi) {
  unsigned e = cprof__unload_enter_sigsafe();
  int ok = !cprof__unload_busy_sigsafe() && fp_step(r, hi);
  cprof__unload_leave_sigsafe(e);
  return ok;
}

/* Where step_here's slow path took a frame: nowhere (0), by its rule (1),
 * or by the frame-pointer fallback (2). */
typedef struct moved {
  regs_t r;
  int how;
} moved_t;

/* The step from the frame `r`, whose rule is `rule`, to its caller, where
 * the rule alone will not do: where the tables say nothing about the pc
 * (code made at run time, a JIT's), where the rule's step fails, or after
 * a fallback, where the rule's step must land on a return address: one
 * checked frame-pointer step. Out of line, and given the registers by
 * value, so that the walk keeps its own in registers. */
CPROF_READS_STACK __attribute__((noinline)) static moved_t step_slow(uint64_t rule, regs_t r,
                                                                     uintptr_t hi, int validate) {
  regs_t next = r;
  if (cprof__rule_kind_of(rule) != CPROF__RULE_NOT_FOUND && step(rule, &next, hi, NULL) &&
      (!validate || next.pc == 0 || return_address_here(next.pc)))
    return (moved_t){next, 1};
  next = r;
  if (fp_step_here(&next, hi))
    return (moved_t){next, 2};
  return (moved_t){r, 0};
}

CPROF_READS_STACK __attribute__((noinline)) int cprof__unwind_cfa_here(uintptr_t *pcs, int max,
                                                                       uintptr_t from,
                                                                       uintptr_t stack_hi,
                                                                       cprof__cfa_memo_t *memo) {
  regs_t r;
  /* Where we are: this function's own frame is the first to step over. */
  CPROF_ARCH_HERE(r.pc, r.sp, r.bp);
  int started = from == 0, validate = 0, whole = 0;
  cprof__frames_t f;
  cprof__frames_init(&f, pcs, max);
  uint64_t tag = cprof__unload_tag(); /* the memo's keys are tagged as the cache's */
  uintptr_t last_pc = 0;              /* a recursion returns to the same pc frame after frame */
  uint64_t last_rule = 0;
  for (int frames = 0; frames < CPROF_UNWIND_MAX_FRAMES + 64; frames++) {
    uint64_t rule;
    if (!memo || frames >= CPROF_CFA_MEMO) {
      if (r.pc != last_pc)
        last_rule = rule_of(r.pc, tag), last_pc = r.pc;
      rule = last_rule;
    } else if (memo->pc[frames] == (r.pc | tag)) {
      rule = memo->rule[frames];
    } else {
      rule = rule_of(r.pc, tag);
      memo->pc[frames] = r.pc | tag;
      memo->rule[frames] = rule;
    }
    enum cprof__rule_kind k = cprof__rule_kind_of(rule);
    if (k == CPROF__RULE_UNSUPPORTED || k == CPROF__RULE_SIGNAL || k == CPROF__RULE_FROM_REG)
      return -1; /* the caller walks from a context, which steps over those */
#if !CPROF_ARCH_SIGRETURN_NEEDS_FDE
    /* aarch64's signal trampoline has no FDE: the stack says it is one. */
    if (k == CPROF__RULE_NOT_FOUND && sigframe_by_stack(&r, stack_hi))
      return -1;
#endif
    if (k == CPROF__RULE_OUTERMOST) {
      whole = 1;
      break;
    }
    if (__builtin_expect(k == CPROF__RULE_NOT_FOUND || validate, 0) ||
        !step(rule, &r, stack_hi, NULL)) {
      moved_t m = step_slow(rule, r, stack_hi, validate);
      if (!m.how) {
        if (cprof__frames_seen(&f) > 0) /* the stack goes on where we cannot follow: say so */
          cprof__frames_add(&f, CPROF_PC_STACK_CUT);
        whole = 1;
        break;
      }
      r = m.r;
      validate = m.how == 2;
    }
    if (r.pc == 0) { /* a zeroed return address ends a stack */
      whole = 1;
      break;
    }
    started |= r.pc == from;
    if (started) {
      if (!cprof__frames_room(&f))
        break;
      cprof__frames_put(&f, r.pc);
    }
    r.pc -= 1; /* inside the call, which may be a function's last instruction */
  }
  return cprof__frames_end(&f, whole);
}

/* ---- the walk from an interrupted context (the signal handlers') ----
 *
 * The memo of cprof__unwind_cfa_here is not used here. It belongs to the
 * heap sampler, which writes it on the same thread outside signal context,
 * word by word and without fences: a handler that interrupted such a write
 * could read a pc with another pc's rule. The shared cache is safe to use:
 * a handler that interrupts a writer of a slot on its own thread finds the
 * slot's sequence odd and takes it for a miss (and leaves it alone), and a
 * reader it interrupts sees the sequence change and discards what it read. */

/* Whether `ret` is a return address: ret - 1 lies in a function the unwind
 * tables describe, and the bytes before ret end in a call instruction. The
 * bytes are read only where they are known to be mapped: in the same page
 * as ret - 1 (which the tables place in a loaded module's code), or, when
 * they straddle a page boundary, inside the function's own range. Every
 * kind of rule but UNSUPPORTED and NOT_FOUND says ret - 1 is inside an
 * FDE's range; UNSUPPORTED may also mean tables we could not read, so
 * there the range is looked up again (uncached: fallbacks are rare).
 *
 * The word tested is any word of the stack, which may point into a library
 * unloaded since (a stale word, or a cached rule older than the unload):
 * so, first, the dynamic linker must list a module holding ret - 1 now,
 * asked afresh. unload.h says why that holds until the read is done. */
static int is_return_address(uintptr_t ret) {
  cprof__cfa_module_t mod;
  if ((ret & (CPROF_ARCH_INSN_ALIGN - 1)) != 0) /* aarch64: every instruction is 4-aligned */
    return 0;
  if (ret < 4096 || !cprof__cfa_module_of(ret - 1, &mod) || ret - 1 < mod.start || ret > mod.end)
    return 0;
  enum cprof__rule_kind k = cprof__rule_kind_of(rule_of(ret - 1, cprof__unload_tag()));
  if (k == CPROF__RULE_NOT_FOUND)
    return 0;
  int straddles = ((ret - 8) ^ (ret - 1)) >= 4096;
  if (k == CPROF__RULE_UNSUPPORTED || straddles) {
    uintptr_t start = UINTPTR_MAX; /* set only once ret - 1 is in the FDE's range */
    cprof__cfa_find_rule(ret - 1, &start);
    if (start == UINTPTR_MAX || (straddles && start > ret - 8))
      return 0;
  }
  unsigned char b[8];
  memcpy(b, (const void *)(ret - 8), sizeof b);
  return cprof__arch_ends_in_call(b);
}

/* What the walk does where the rules cannot go on: take the return address
 * at the stack pointer (x86-64) or in the link register (aarch64, x30 of
 * the interrupted context `g`), for a frame interrupted before it saved
 * anything (a leaf, a PLT stub, the first instructions of a function); or
 * follow the frame-pointer chain one step (a frame record {saved frame
 * pointer, return address} at the frame pointer, on both). Each only when
 * what it finds is a return address. */
CPROF_READS_STACK static int leaf_step(regs_t *r, uintptr_t hi, const mcontext_t *g) {
  uintptr_t ret;
#if CPROF_ARCH_LINK_REGISTER
  /* Where the frame record at x29 holds x30 already, the frame has saved
   * it (and moved sp): that step is fp_step's, which knows the caller's sp. */
  uintptr_t saved;
  ret = cprof__arch_strip_ra(cprof__arch_dwarf_reg(g, CPROF_ARCH_DW_RA));
  if ((peek(r->bp + 8, r->sp, hi, &saved) && cprof__arch_strip_ra(saved) == ret) ||
      !is_return_address(ret))
    return 0;
  *r = (regs_t){ret, r->sp, r->bp};
#else
  (void)g;
  if (!peek(r->sp, r->sp, hi, &ret) || !is_return_address(ret))
    return 0;
  *r = (regs_t){ret, r->sp + 8, r->bp};
#endif
  return 1;
}

CPROF_READS_STACK static int fp_step(regs_t *r, uintptr_t hi) {
  uintptr_t ret, bp;
  if (!peek(r->bp + 8, r->sp, hi, &ret) || !peek(r->bp, r->sp, hi, &bp) ||
      !is_return_address(ret = cprof__arch_strip_ra(ret)))
    return 0;
  *r = (regs_t){ret, r->bp + 16, bp};
  return 1;
}

/* The signal trampoline's bytes (arch.h: glibc's __restore_rt on x86-64,
 * the vDSO's __kernel_rt_sigreturn on aarch64). */
static const unsigned char trampoline[CPROF_ARCH_SIGRETURN_LEN] = CPROF_ARCH_SIGRETURN;

/* memcmp(a, b, n) == 0, without a call out of this file in signal context
 * (a program linking cprof statically may bind its calls lazily). */
static int same_bytes(uintptr_t a, const unsigned char *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (((const unsigned char *)a)[i] != b[i])
      return 0;
  return 1;
}

#if !CPROF_ARCH_SIGRETURN_NEEDS_FDE
/* aarch64's signal frame where its trampoline is in no module (qemu-user
 * puts it in a page of its own), recognised by the stack alone, so that
 * no code is read where nothing says it is mapped: at the stack pointer
 * the kernel's rt_sigframe, a siginfo then the ucontext, whose first
 * record after the registers is the FP/SIMD one (FPSIMD_MAGIC, 528 bytes:
 * arch/arm64/include/uapi/asm/sigcontext.h); and above it the frame record
 * the kernel pointed x29 at for the handler, {x29, x30} of the interrupted
 * context, which the handler's frame gave back as r->bp. Both as Linux
 * (arch/arm64/kernel/signal.c, setup_return) and qemu-user write them. */
CPROF_READS_STACK static const ucontext_t *sigframe_by_stack(const regs_t *r, uintptr_t hi) {
  uintptr_t ucp = r->sp + CPROF_ARCH_SIGFRAME_UC;
  size_t need = offsetof(ucontext_t, uc_mcontext) + offsetof(mcontext_t, __reserved) + 8;
  if ((r->sp & 15) || ucp > hi || hi - ucp < need)
    return NULL;
  const ucontext_t *uc = (const ucontext_t *)ucp;
  const uint32_t *rec = (const uint32_t *)(const void *)uc->uc_mcontext.__reserved;
  if (rec[0] != 0x46508001u || rec[1] != 528)
    return NULL;
  uintptr_t fr = r->bp;
  if (fr < ucp + need || fr > hi - 16 || (fr & 7))
    return NULL;
  const uintptr_t *w = (const uintptr_t *)fr;
  if (w[0] != cprof__arch_fp(uc) || w[1] != cprof__arch_lr(uc))
    return NULL;
  return uc;
}
#endif

/* Steps over a signal frame. `at` is the pc the rule was found for (r->pc,
 * or r->pc - 1 for a return address); the trampoline is looked for where
 * the pc says the thread is in it, and only inside its FDE's range: on
 * x86-64 glibc's trampoline has one (augmentation 'S'). The aarch64
 * kernel's has none since Linux 5.8, nor has qemu-user's: there, for a pc
 * in no FDE, the bytes are read only inside a module the dynamic linker
 * lists now (the vDSO), and elsewhere the stack alone says it is a signal
 * frame (sigframe_by_stack). The kernel's rt_sigframe then has the
 * interrupted context's ucontext at the stack pointer, or after the
 * siginfo (arch.h, CPROF_ARCH_SIGFRAME_UC), whose registers are laid out
 * as glibc's mcontext_t. The rule is looked up again, uncached (signal
 * frames are rare): the trampoline's range is then that of a module
 * loaded now, whatever the cache held. */
CPROF_READS_STACK static int signal_step(uintptr_t at, int exact, regs_t *r, uintptr_t hi,
                                         const mcontext_t **regs) {
  uint64_t rule = cprof__cfa_find_rule(at, NULL);
  uintptr_t start, end;
  if (cprof__rule_kind_of(rule) == CPROF__RULE_SIGNAL) {
    start = at - ((rule >> 16) & 0xffff), end = at + (rule >> 32);
  } else {
#if CPROF_ARCH_SIGRETURN_NEEDS_FDE
    return 0;
#else
    cprof__cfa_module_t mod;
    if (cprof__rule_kind_of(rule) != CPROF__RULE_NOT_FOUND)
      return 0;
    if (!cprof__cfa_module_of(r->pc, &mod)) {
      const ucontext_t *uc = sigframe_by_stack(r, hi);
      if (!uc)
        return 0;
      *r = (regs_t){cprof__arch_pc(uc), cprof__arch_sp(uc), cprof__arch_fp(uc)};
      *regs = &uc->uc_mcontext;
      return 1;
    }
    start = mod.start, end = mod.end;
#endif
  }
  /* At its first instruction, or (the exact pc) at the second. */
  uintptr_t candidates[2] = {r->pc, exact ? r->pc - CPROF_ARCH_SIGRETURN_SECOND : 0};
  int found = 0;
  for (int i = 0; i < 2 && !found; i++) {
    uintptr_t t = candidates[i];
    found =
        t >= start && t + sizeof trampoline <= end && same_bytes(t, trampoline, sizeof trampoline);
  }
  if (!found)
    return 0;
  uintptr_t ucp = r->sp + CPROF_ARCH_SIGFRAME_UC;
  const ucontext_t *uc = (const ucontext_t *)ucp;
  size_t need = offsetof(ucontext_t, uc_mcontext) + CPROF_ARCH_MCONTEXT_READ;
  if ((ucp & 7) || ucp < r->sp || ucp > hi || hi - ucp < need)
    return 0;
  *r = (regs_t){cprof__arch_pc(uc), cprof__arch_sp(uc), cprof__arch_fp(uc)};
  *regs = &uc->uc_mcontext;
  return 1;
}

CPROF_READS_STACK static int walk_sigsafe(const ucontext_t *uc, const cprof__maps_t *stacks,
                                          uintptr_t *pcs, int max) {
  const mcontext_t *g = &uc->uc_mcontext; /* all the registers, for exact frames */
  regs_t r = {cprof__arch_pc(uc), cprof__arch_sp(uc), cprof__arch_fp(uc)};
  const stack_t *alt = &uc->uc_stack;
  uintptr_t hi = cprof__stack_top_sigsafe(r.sp, alt, stacks);
  uint64_t tag = cprof__unload_tag();
  int exact = 1;         /* r.pc is where the thread is, not a return address */
  int validate = 0;      /* the frame was reached by a fallback: check the rules' next step */
  uintptr_t last_pc = 0; /* the last return address looked up, and its rule */
  uint64_t last_rule = 0;
  cprof__frames_t f;
  cprof__frames_init(&f, pcs, max);
  cprof__frames_add(&f, r.pc);
  /* One place asks for room for the next frame: the ring's bookkeeping
   * (frames.h) is inlined once. */
  while (cprof__frames_room(&f)) {
    if (!hi)
      goto cut; /* the stack's top is unknown: nothing above sp may be read */
    /* Most frames, kept tight: a return address whose rule needs neither
     * the other registers nor a check of what it gives. */
    if (!exact && !validate) {
      if (r.pc != last_pc) /* a recursion returns to the same pc frame after frame */
        last_rule = rule_of(r.pc - 1, tag), last_pc = r.pc;
      uint64_t rule = last_rule;
      if ((1u << cprof__rule_kind_of(rule)) &
          (1u << CPROF__RULE_FROM_RSP | 1u << CPROF__RULE_FROM_RBP | 1u << CPROF__RULE_DEREF_RBP)) {
        if (!step(rule, &r, hi, NULL))
          goto cut;
        if (r.pc == 0)
          return cprof__frames_end(&f, 1); /* a zeroed return address also ends a stack */
        cprof__frames_put(&f, r.pc);
        continue;
      }
    }
    uintptr_t at = exact ? r.pc : r.pc - 1;
    uint64_t rule = rule_of(at, tag);
    regs_t next = r;
    switch (cprof__rule_kind_of(rule)) {
    case CPROF__RULE_OUTERMOST:
      return cprof__frames_end(&f, 1);
    case CPROF__RULE_FROM_REG:
      if (!exact)
        break; /* only %rsp and %rbp are known above the first frame */
      /* fall through */
    case CPROF__RULE_FROM_RSP:
    case CPROF__RULE_FROM_RBP:
    case CPROF__RULE_DEREF_RBP:
      if (!step(rule, &next, hi, exact ? g : NULL))
        goto cut;
      if (next.pc == 0)
        return cprof__frames_end(&f, 1); /* a zeroed return address also ends a stack */
      if (!validate || is_return_address(next.pc)) {
        r = next;
        exact = validate = 0;
        cprof__frames_put(&f, r.pc);
        continue;
      }
      next = r;
      break;
    case CPROF__RULE_SIGNAL:
      if (!signal_step(at, exact, &next, hi, &g))
        goto cut;
    signal_frame:
      r = next;
      exact = 1;
      validate = 0;
      /* An exact pc among return addresses: one past it, so that the
       * convention's "one byte back" lands on it. */
      cprof__frames_put(&f, r.pc + 1);
      /* The thread's sigaltstack is the one the kernel gave the handler
       * (uc), not the one this frame's ucontext claims: the walk trusts
       * nothing it read from the stack with deciding where it may read. */
      hi = cprof__stack_top_sigsafe(r.sp, alt, stacks);
      continue;
    case CPROF__RULE_NOT_FOUND:
      /* aarch64's trampoline has no FDE: its bytes say what it is. */
      if (!CPROF_ARCH_SIGRETURN_NEEDS_FDE && signal_step(at, exact, &next, hi, &g))
        goto signal_frame;
      next = r;
      break; /* the fallbacks below */
    default:
      break; /* UNSUPPORTED: the fallbacks below */
    }
    if ((exact && leaf_step(&next, hi, g)) || fp_step(&next, hi)) {
      r = next;
      exact = 0;
      validate = 1;
      cprof__frames_put(&f, r.pc);
      continue;
    }
    goto cut;
  }
  return cprof__frames_end(&f, 0); /* at the bound, with more stack above */
cut:
  cprof__frames_add(&f, CPROF_PC_STACK_CUT);
  return cprof__frames_end(&f, 1);
}

int cprof__unwind_cfa_sigsafe(const ucontext_t *uc, const cprof__maps_t *stacks, uintptr_t *pcs,
                              int max) {
  if (max <= 0)
    return 0;
  unsigned e = cprof__unload_enter_sigsafe();
  int n;
  if (!cprof__unload_busy_sigsafe()) {
    n = walk_sigsafe(uc, stacks, pcs, max);
  } else { /* a dlclose is unmapping: no unwind table or code may be read */
    n = 0;
    pcs[n++] = cprof__arch_pc(uc);
    if (n < max)
      pcs[n++] = CPROF_PC_STACK_CUT;
  }
  cprof__unload_leave_sigsafe(e);
  return n;
}

int cprof__cfa_is_return_address_sigsafe(uintptr_t ret) { return is_return_address(ret); }

uintptr_t cprof__cfa_function_start_sigsafe(uintptr_t pc) {
  uintptr_t start = 0;
  cprof__cfa_find_rule(pc, &start);
  return start;
}
