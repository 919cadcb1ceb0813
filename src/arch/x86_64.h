/* x86-64 (System V psABI) for src/arch/arch.h. Include arch.h, not this. */
#ifndef CPROF_ARCH_X86_64_H
#define CPROF_ARCH_X86_64_H

#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>

#define CPROF_ARCH_NAME "x86_64"

static inline uintptr_t cprof__arch_pc(const ucontext_t *uc) {
  return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
}
static inline uintptr_t cprof__arch_sp(const ucontext_t *uc) {
  return (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
}
static inline uintptr_t cprof__arch_fp(const ucontext_t *uc) {
  return (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
}
/* A call pushes its return address: there is no link register. */
static inline uintptr_t cprof__arch_lr(const ucontext_t *uc) {
  (void)uc;
  return 0;
}

/* The current pc, %rsp and %rbp: a statement, so that they are the
 * caller's own (an inline function's frame is its caller's too). */
#define CPROF_ARCH_HERE(pc, sp, fp)                                                                \
  __asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"                            \
                   : "=r"(pc), "=r"(sp), "=r"(fp))

/* The same into the general-purpose registers of a ucontext. */
#define cprof__arch_context_here(uc)                                                               \
  do {                                                                                             \
    greg_t *g_ = (uc)->uc_mcontext.gregs;                                                          \
    CPROF_ARCH_HERE(g_[REG_RIP], g_[REG_RSP], g_[REG_RBP]);                                        \
  } while (0)

/* Sets the registers a walker starts from (tests make contexts so); lr is
 * ignored: there is no link register. */
static inline void cprof__arch_context_set(ucontext_t *uc, uintptr_t pc, uintptr_t sp, uintptr_t fp,
                                           uintptr_t lr) {
  (void)lr;
  uc->uc_mcontext.gregs[REG_RIP] = (greg_t)pc;
  uc->uc_mcontext.gregs[REG_RSP] = (greg_t)sp;
  uc->uc_mcontext.gregs[REG_RBP] = (greg_t)fp;
}

/* DWARF register numbers (System V psABI, figure 3.36): %rbp 6, %rsp 7,
 * the return address column 16. */
enum { CPROF_ARCH_DW_FP = 6, CPROF_ARCH_DW_SP = 7, CPROF_ARCH_DW_RA = 16, CPROF_ARCH_DW_REGS = 16 };

/* DWARF register n of an interrupted context, where n < CPROF_ARCH_DW_REGS:
 * DWARF's order is not gregset_t's. */
static inline uintptr_t cprof__arch_dwarf_reg(const mcontext_t *mc, unsigned n) {
  static const unsigned char greg_of_dwarf[16] = {
      REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI, REG_RBP, REG_RSP,
      REG_R8,  REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15};
  return (uintptr_t)mc->gregs[greg_of_dwarf[n]];
}

/* Instructions start at any byte. */
#define CPROF_ARCH_INSN_ALIGN 1

/* Whether the 8 bytes before a return address, b[0..7] with b[7] the byte
 * just before it, end in a call: e8 rel32, or ff /2 with a register,
 * [reg+disp8], [reg+disp32] or [rip+disp32] operand (a REX prefix before
 * ff, for r8-r15, changes nothing after it). Pure: signal-safe. */
static inline int cprof__arch_ends_in_call(const unsigned char b[8]) {
  return b[3] == 0xe8 ||                                              /* call rel32 */
         (b[2] == 0xff && (b[3] == 0x15 || (b[3] & 0xf8) == 0x90)) || /* call *disp32(...) */
         (b[5] == 0xff && (b[6] & 0xf8) == 0x50) ||                   /* call *disp8(%reg) */
         (b[6] == 0xff && (b[7] & 0xf8) == 0xd0);                     /* call *%reg */
}

/* The signal trampoline, glibc's __restore_rt: "mov $15, %rax; syscall"
 * (rt_sigreturn), the bytes libgcc's fallback for x86-64 Linux
 * (linux-unwind.h) also recognises it by. The kernel's rt_sigframe has the
 * interrupted context's ucontext at the stack pointer there
 * (arch/x86/include/asm/sigframe.h: the return address was its first
 * field, which the handler's return popped). glibc gives the trampoline
 * an FDE of augmentation 'S', which the walker requires. */
#define CPROF_ARCH_SIGRETURN                                                                       \
  { 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05 }
#define CPROF_ARCH_SIGRETURN_LEN 9
#define CPROF_ARCH_SIGRETURN_SECOND 7
#define CPROF_ARCH_SIGFRAME_UC 0
#define CPROF_ARCH_SIGRETURN_NEEDS_FDE 1
/* How much of uc_mcontext the walker reads: the general-purpose registers. */
#define CPROF_ARCH_MCONTEXT_READ sizeof(gregset_t)

/* Whether calls leave the return address in a register (not on the stack). */
#define CPROF_ARCH_LINK_REGISTER 0

static inline void cprof__arch_pause(void) { __builtin_ia32_pause(); }

/* No pointer authentication on x86-64. */
static inline uintptr_t cprof__arch_strip_ra(uintptr_t ret) { return ret; }

#endif
