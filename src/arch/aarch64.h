/* aarch64 (AAPCS64, Linux) for src/arch/arch.h. Include arch.h, not this.
 *
 * What differs from x86-64 for a walker: a call (BL, BLR) leaves its
 * return address in the link register x30, not on the stack; a function
 * that calls others saves x29 and x30 as a frame record {x29, x30} and
 * points x29 at it; until its prologue does, and in a leaf that never
 * does, the return address is in x30 alone. Return addresses may carry a
 * pointer authentication code (PAC) in their top bits, signed by PACIASP
 * in the prologue. */
#ifndef CPROF_ARCH_AARCH64_H
#define CPROF_ARCH_AARCH64_H

#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>

#define CPROF_ARCH_NAME "aarch64"

static inline uintptr_t cprof__arch_pc(const ucontext_t *uc) {
  return (uintptr_t)uc->uc_mcontext.pc;
}
static inline uintptr_t cprof__arch_sp(const ucontext_t *uc) {
  return (uintptr_t)uc->uc_mcontext.sp;
}
static inline uintptr_t cprof__arch_fp(const ucontext_t *uc) {
  return (uintptr_t)uc->uc_mcontext.regs[29];
}
static inline uintptr_t cprof__arch_lr(const ucontext_t *uc) {
  return (uintptr_t)uc->uc_mcontext.regs[30];
}

/* The current pc, sp and x29: a statement, so that they are the caller's
 * own. */
#define CPROF_ARCH_HERE(pc, sp, fp)                                                                \
  __asm__ volatile("adr %0, .\n\tmov %1, sp\n\tmov %2, x29" : "=r"(pc), "=r"(sp), "=r"(fp))

/* The same into a ucontext, with x30. */
#define cprof__arch_context_here(uc)                                                               \
  do {                                                                                             \
    mcontext_t *m_ = &(uc)->uc_mcontext;                                                           \
    CPROF_ARCH_HERE(m_->pc, m_->sp, m_->regs[29]);                                                 \
    __asm__ volatile("mov %0, x30" : "=r"(m_->regs[30]));                                          \
  } while (0)

/* Sets the registers a walker starts from (tests make contexts so). */
static inline void cprof__arch_context_set(ucontext_t *uc, uintptr_t pc, uintptr_t sp, uintptr_t fp,
                                           uintptr_t lr) {
  uc->uc_mcontext.pc = pc;
  uc->uc_mcontext.sp = sp;
  uc->uc_mcontext.regs[29] = fp;
  uc->uc_mcontext.regs[30] = lr;
}

/* DWARF register numbers (DWARF for the Arm 64-bit Architecture, 4.1):
 * x0-x30 are 0-30, sp 31; x29 the frame pointer, x30 the link register
 * and the return address column. */
enum {
  CPROF_ARCH_DW_FP = 29,
  CPROF_ARCH_DW_SP = 31,
  CPROF_ARCH_DW_RA = 30,
  CPROF_ARCH_DW_REGS = 31
};

/* DWARF register n (x0-x30) of an interrupted context, n < CPROF_ARCH_DW_REGS. */
static inline uintptr_t cprof__arch_dwarf_reg(const mcontext_t *mc, unsigned n) {
  return (uintptr_t)mc->regs[n];
}

/* Every instruction is 4 bytes, 4-aligned: so is a return address. */
#define CPROF_ARCH_INSN_ALIGN 4

/* Whether the 8 bytes before a return address end in a call: the last
 * instruction, b[4..7] (little-endian), is BL imm26, BLR Xn, or one of the
 * authenticating BLRAA, BLRAAZ, BLRAB, BLRABZ (Arm ARM, C6.2). Pure:
 * signal-safe. */
static inline int cprof__arch_ends_in_call(const unsigned char b[8]) {
  uint32_t w = (uint32_t)b[4] | (uint32_t)b[5] << 8 | (uint32_t)b[6] << 16 | (uint32_t)b[7] << 24;
  return (w & 0xfc000000u) == 0x94000000u || /* BL */
         (w & 0xfffffc1fu) == 0xd63f0000u || /* BLR */
         (w & 0xfefff800u) == 0xd63f0800u;   /* BLRAA, BLRAAZ, BLRAB, BLRABZ */
}

/* The signal trampoline: the vDSO's __kernel_rt_sigreturn, "mov x8, #139;
 * svc #0" (rt_sigreturn; arch/arm64/kernel/vdso/sigreturn.S), or the same
 * two instructions where qemu-user or an SA_RESTORER puts them. Since Linux
 * 5.8 the vDSO gives it no CFI (libgcc's aarch64 fallback matches these
 * bytes too), so the walker looks for them where the tables say nothing.
 * The kernel's rt_sigframe at the stack pointer there is a siginfo, then
 * the ucontext (arch/arm64/kernel/signal.c, struct rt_sigframe), whose
 * layout glibc's ucontext_t follows. */
#define CPROF_ARCH_SIGRETURN                                                                       \
  { 0x68, 0x11, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4 }
#define CPROF_ARCH_SIGRETURN_LEN 8
#define CPROF_ARCH_SIGRETURN_SECOND 4
#define CPROF_ARCH_SIGFRAME_UC sizeof(siginfo_t)
#define CPROF_ARCH_SIGRETURN_NEEDS_FDE 0
/* How much of uc_mcontext the walker reads: x0-x30, sp, pc, pstate (not
 * the 4 KiB of extension records after them). */
#define CPROF_ARCH_MCONTEXT_READ (offsetof(mcontext_t, pstate) + sizeof(unsigned long long))

/* Whether calls leave the return address in a register: x30. */
#define CPROF_ARCH_LINK_REGISTER 1

/* YIELD: a hint to the core, as x86's PAUSE. */
static inline void cprof__arch_pause(void) { __asm__ volatile("yield" ::: "memory"); }

/* A return address without its PAC bits: XPACLRI on the value moved into
 * x30. It is in the hint space (HINT #7): a NOP on a CPU without pointer
 * authentication, where there are no bits to strip, and it needs no
 * assembler support for PAC. A mask would have to know the virtual address
 * size (48 or 52 bits) and whether top-byte-ignore is on, which a signal
 * handler cannot ask without a system call; the instruction knows both. */
static inline uintptr_t cprof__arch_strip_ra(uintptr_t ret) {
  register uintptr_t x30 __asm__("x30") = ret;
  __asm__("hint #7" : "+r"(x30));
  return x30;
}

#endif
