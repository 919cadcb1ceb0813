/* What the cached DWARF unwinder's two files share: the rule for a pc as
 * eh_frame.c reads it from a module's unwind tables, and cfa.c caches and
 * steps by. Not for other parts of cprof: they use unwind/cfa.h. */
#ifndef CPROF_UNWIND_CFA_RULE_H
#define CPROF_UNWIND_CFA_RULE_H

#include <stdint.h>

/* Hidden, as every definition of cprof's: the handlers reach these
 * directly, not through the GOT. */
#pragma GCC visibility push(hidden)

/* A rule, packed in a word so that the cache holds it whole. The kinds
 * name x86-64's registers; on aarch64 "RSP" is sp and "RBP" x29, the
 * frame pointer (arch/arch.h's CPROF_ARCH_DW_SP and _FP).
 *
 * x86-64: bits 0-2 the kind, bits 3-4 where %rbp is saved, bits 5-9 the
 * CFA's base register for CPROF__RULE_FROM_REG, bits 16-31 where %rbp is
 * saved (from the CFA, or from %rbp), bits 32-63 the CFA's offset from its
 * base. The return address is always at CFA - 8 (a call pushed it).
 * aarch64: bits 0-9 as on x86-64, bits 10-11 where x30 (the return
 * address) is, bits 12-25 and 26-39 where x29 and x30 are saved, in 8-byte
 * words (every save slot is 8-aligned), and bits 40-63 the CFA's offset.
 * For CPROF__RULE_SIGNAL, bits 16-31 and 32-63 hold instead how far the pc
 * is from the start and from the end of the trampoline's FDE. */
enum cprof__rule_kind {
  CPROF__RULE_UNSUPPORTED = 0, /* a rule beyond this walker: expressions, other registers */
  CPROF__RULE_FROM_RSP = 1,    /* CFA = %rsp + offset */
  CPROF__RULE_FROM_RBP = 2,    /* CFA = %rbp + offset */
  CPROF__RULE_OUTERMOST = 3,   /* the return address is undefined: the stack ends here */
  CPROF__RULE_NOT_FOUND = 4,   /* the pc is in no function the unwind tables describe */
  CPROF__RULE_SIGNAL = 5,      /* a signal trampoline: the FDE's CIE has augmentation 'S' */
  CPROF__RULE_DEREF_RBP = 6,   /* CFA = *(%rbp + offset): GCC's realigned frames (DRAP) */
  CPROF__RULE_FROM_REG = 7,    /* CFA = another register + offset: only where all are known */
};
enum cprof__rbp_rule { CPROF__RBP_SAME = 0, CPROF__RBP_AT_CFA = 1, CPROF__RBP_AT_RBP = 2 };
/* Where the return address is: saved at CFA + offset, or (aarch64) still
 * in the link register, which only the interrupted frame knows. */
enum cprof__ra_rule { CPROF__RA_AT_CFA = 0, CPROF__RA_IN_LR = 1 };

#if defined(__aarch64__)
/* Whether the offsets fit the packing: the caller checks before packing. */
static inline int cprof__rule_fits(int64_t cfa_off, int64_t rbp_off, int64_t ra_off) {
  return cfa_off >= -(1 << 23) && cfa_off < (1 << 23) && !(rbp_off & 7) && !(ra_off & 7) &&
         rbp_off / 8 >= -(1 << 13) && rbp_off / 8 < (1 << 13) && ra_off / 8 >= -(1 << 13) &&
         ra_off / 8 < (1 << 13);
}
static inline uint64_t cprof__rule_pack(enum cprof__rule_kind k, int32_t cfa_off,
                                        enum cprof__rbp_rule rbp, int32_t rbp_off, unsigned reg,
                                        enum cprof__ra_rule ra, int32_t ra_off) {
  return (uint64_t)k | (uint64_t)rbp << 3 | (uint64_t)(reg & 31) << 5 | (uint64_t)(ra & 3) << 10 |
         (uint64_t)((rbp_off / 8) & 0x3fff) << 12 | (uint64_t)((ra_off / 8) & 0x3fff) << 26 |
         (uint64_t)(cfa_off & 0xffffff) << 40;
}
static inline int64_t cprof__rule_cfa_off(uint64_t r) { return (int64_t)r >> 40; }
static inline int64_t cprof__rule_rbp_off(uint64_t r) {
  return ((int64_t)(r << (64 - 26)) >> (64 - 14)) * 8;
}
static inline enum cprof__ra_rule cprof__rule_ra(uint64_t r) {
  return (enum cprof__ra_rule)((r >> 10) & 3);
}
static inline int64_t cprof__rule_ra_off(uint64_t r) {
  return ((int64_t)(r << (64 - 40)) >> (64 - 14)) * 8;
}
#else
static inline int cprof__rule_fits(int64_t cfa_off, int64_t rbp_off, int64_t ra_off) {
  return cfa_off == (int32_t)cfa_off && rbp_off == (int16_t)rbp_off && ra_off == -8;
}
static inline uint64_t cprof__rule_pack(enum cprof__rule_kind k, int32_t cfa_off,
                                        enum cprof__rbp_rule rbp, int32_t rbp_off, unsigned reg,
                                        enum cprof__ra_rule ra, int32_t ra_off) {
  (void)ra, (void)ra_off; /* always at CFA - 8 */
  return (uint64_t)k | (uint64_t)rbp << 3 | (uint64_t)(reg & 31) << 5 |
         (uint64_t)(uint16_t)rbp_off << 16 | (uint64_t)(uint32_t)cfa_off << 32;
}
static inline int64_t cprof__rule_cfa_off(uint64_t r) { return (int32_t)(uint32_t)(r >> 32); }
static inline int64_t cprof__rule_rbp_off(uint64_t r) { return (int16_t)(uint16_t)(r >> 16); }
static inline enum cprof__ra_rule cprof__rule_ra(uint64_t r) {
  (void)r;
  return CPROF__RA_AT_CFA;
}
static inline int64_t cprof__rule_ra_off(uint64_t r) {
  (void)r;
  return -8;
}
#endif
static inline enum cprof__rule_kind cprof__rule_kind_of(uint64_t r) {
  return (enum cprof__rule_kind)(r & 7);
}
static inline enum cprof__rbp_rule cprof__rule_rbp(uint64_t r) {
  return (enum cprof__rbp_rule)((r >> 3) & 3);
}
static inline unsigned cprof__rule_reg(uint64_t r) { return (r >> 5) & 31; }

/* A module as the dynamic linker lists it now. */
typedef struct cprof__cfa_module {
  uintptr_t start, end;    /* its mapped range */
  const uint8_t *eh_frame; /* its .eh_frame_hdr, or NULL */
} cprof__cfa_module_t;

/* The loaded module that holds `pc`, from _dl_find_object (eh_frame.c
 * says more); 0 when no module does. */
int cprof__cfa_module_of(uintptr_t pc, cprof__cfa_module_t *out);

/* The rule for `pc`, from the tables of the module that holds it. *start,
 * when the pc is inside an FDE's range, is set to the range's first pc. */
uint64_t cprof__cfa_find_rule(uintptr_t pc, uintptr_t *start);

#pragma GCC visibility pop

#endif
