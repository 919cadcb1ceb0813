/* Reading a module's unwind tables for the cached DWARF unwinder (cfa.c):
 * the rule for a pc, from the module's .eh_frame_hdr (found with
 * _dl_find_object), a sorted table of (first pc, FDE) pairs searched by
 * bisection; then the FDE's CIE gives the initial rules and the encodings,
 * and the CIE's and FDE's call-frame instructions are run up to the pc.
 * Formats: the "Exception Frame" chapter of the Linux Standard Base Core
 * specification, and DWARF 5 section 6.4. Only the rules for the CFA, the
 * frame pointer (%rbp, x29) and the return address are kept: the other
 * registers never matter for finding the next frame of compiled code.
 *
 * The signal handlers' walks come here on a cache miss: nothing here
 * allocates, locks or makes a system call. */
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

#include "arch/arch.h"
#include "core/search.h"
#include "unwind/cfa_rule.h"

/* The frame pointer's and the stack pointer's DWARF numbers (arch/arch.h):
 * %rbp and %rsp, or x29 and sp. */
enum { DW_REG_RBP = CPROF_ARCH_DW_FP, DW_REG_RSP = CPROF_ARCH_DW_SP };

/* ---- reading .eh_frame ---- */

static uint64_t uleb(const uint8_t **pp, const uint8_t *end) {
  uint64_t v = 0;
  int shift = 0;
  const uint8_t *p = *pp;
  while (p < end) {
    uint8_t b = *p++;
    if (shift < 64)
      v |= (uint64_t)(b & 0x7f) << shift;
    shift += 7;
    if (!(b & 0x80))
      break;
  }
  *pp = p;
  return v;
}

static int64_t sleb(const uint8_t **pp, const uint8_t *end) {
  uint64_t v = 0;
  int shift = 0;
  uint8_t b = 0;
  const uint8_t *p = *pp;
  while (p < end) {
    b = *p++;
    if (shift < 64)
      v |= (uint64_t)(b & 0x7f) << shift;
    shift += 7;
    if (!(b & 0x80))
      break;
  }
  if (shift < 64 && (b & 0x40))
    v |= ~(uint64_t)0 << shift;
  *pp = p;
  return (int64_t)v;
}

/* The 4-byte signed word at p, which may be unaligned. */
static inline int32_t s32_at(const uint8_t *p) {
  int32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

#define READ(type, p)                                                                              \
  ({                                                                                               \
    type v_;                                                                                       \
    memcpy(&v_, p, sizeof v_);                                                                     \
    p += sizeof v_;                                                                                \
    v_;                                                                                            \
  })

/* A pointer in one of the DW_EH_PE encodings: absolute, pc-relative or
 * relative to `datarel` (.eh_frame_hdr's start), never indirect. 0 for
 * an encoding we do not read. */
static int read_encoded(const uint8_t **pp, const uint8_t *end, uint8_t enc, uintptr_t datarel,
                        uintptr_t *out) {
  const uint8_t *p = *pp;
  uintptr_t base, v;
  switch (enc & 0x70) {
  case 0x00:
    base = 0;
    break;
  case 0x10:
    base = (uintptr_t)p;
    break;
  case 0x30:
    base = datarel;
    break;
  default:
    return 0;
  }
  if ((enc & 0x80) || ((enc & 0x70) == 0x30 && !datarel))
    return 0;
  switch (enc & 0x0f) {
  case 0x00:
    v = READ(uint64_t, p);
    break;
  case 0x01:
    v = uleb(&p, end);
    break;
  case 0x02:
    v = READ(uint16_t, p);
    break;
  case 0x03:
    v = READ(uint32_t, p);
    break;
  case 0x04:
    v = READ(uint64_t, p);
    break;
  case 0x09:
    v = (uintptr_t)sleb(&p, end);
    break;
  case 0x0a:
    v = (uintptr_t)(int64_t)READ(int16_t, p);
    break;
  case 0x0b:
    v = (uintptr_t)(int64_t)READ(int32_t, p);
    break;
  case 0x0c:
    v = (uintptr_t)READ(int64_t, p);
    break;
  default:
    return 0;
  }
  if (p > end)
    return 0;
  *out = base + v;
  *pp = p;
  return 1;
}

typedef struct cie {
  uint64_t code_align;
  int64_t data_align;
  uint64_t ra_reg;
  uint8_t fde_enc;
  int augmented; /* 'z': the FDE has augmentation data to skip */
  int signal;    /* 'S': a signal trampoline's frame */
  const uint8_t *insns, *end;
} cie_t;

static int parse_cie(const uint8_t *c, cie_t *out) {
  uint32_t len;
  memcpy(&len, c, sizeof len);
  if (len == 0 || len == 0xffffffff) /* a terminator, or a 64-bit .eh_frame */
    return 0;
  const uint8_t *p = c + 4, *end = c + 4 + len;
  if (READ(uint32_t, p) != 0)
    return 0;
  uint8_t version = *p++;
  if (version != 1 && version != 3)
    return 0;
  const char *aug = (const char *)p;
  size_t n = 0; /* strnlen, without a call out of this file in signal context */
  while (p + n < end && aug[n])
    n++;
  p += n + 1;
  *out = (cie_t){.fde_enc = 0};
  out->code_align = uleb(&p, end);
  out->data_align = sleb(&p, end);
  out->ra_reg = version == 1 ? *p++ : uleb(&p, end);
  if (aug[0] == 'z') {
    uint64_t alen = uleb(&p, end);
    const uint8_t *aend = p + alen;
    out->augmented = 1;
    for (size_t i = 1; i < n; i++) {
      uintptr_t ignored;
      switch (aug[i]) {
      case 'R':
        out->fde_enc = *p++;
        break;
      case 'L':
        p++;
        break;
      case 'P': {
        uint8_t enc = *p++;
        if (!read_encoded(&p, aend, enc & 0x7f, 0, &ignored))
          return 0;
        break;
      }
      case 'S':
        out->signal = 1;
        break;
      case 'B':
        break;
      default:
        return 0;
      }
    }
    p = aend;
  } else if (aug[0]) {
    return 0;
  }
  if (p > end)
    return 0;
  out->insns = p;
  out->end = end;
  return 1;
}

/* ---- running the call-frame program ---- */

enum how { SAME = 0, AT, UNDEFINED, OTHER, AT_RBP };
enum cfa_expr { NO_EXPR = 0, OTHER_EXPR, DEREF_RBP_EXPR };

/* Kept small: it is copied for every DW_CFA_remember_state, on the stack of
 * whatever thread a signal interrupted (see STATE_STACK). Offsets beyond
 * 32 bits and registers beyond 255 are saturated: no rule that uses them
 * passes the checks at the end of rule_in_fde. */
typedef struct state {
  int64_t cfa_off;
  int32_t rbp_off, ra_off;
  uint8_t cfa_reg;
  uint8_t cfa_expr; /* enum cfa_expr */
  uint8_t rbp, ra;  /* enum how */
} state_t;

static int32_t sat32(int64_t v) { return v == (int32_t)v ? (int32_t)v : INT32_MIN; }
static uint8_t reg8(uint64_t r) { return r > 255 ? 255 : (uint8_t)r; }

/* DWARF expression opcodes (DWARF 5, section 7.7.1). */
enum { DW_OP_deref = 0x06, DW_OP_breg6 = 0x70 + DW_REG_RBP }; /* breg6: %rbp (x29 on aarch64) */

/* Whether the expression [p, end) is exactly "DW_OP_breg6 off" (with
 * `deref` 0) or "DW_OP_breg6 off; DW_OP_deref" (with `deref` 1): the two
 * that GCC writes for a frame it realigns with a dynamic realignment
 * argument pointer (DRAP), as the CFA (*(%rbp + off)) and as where %rbp is
 * saved (%rbp + 0). The others (the PLT's, the signal trampoline's) are
 * left to the caller's fallbacks. */
static int breg6_expr(const uint8_t *p, const uint8_t *end, int deref, int64_t *off) {
  if (p >= end || *p++ != DW_OP_breg6)
    return 0;
  *off = sleb(&p, end);
  if (deref && (p >= end || *p++ != DW_OP_deref))
    return 0;
  return p == end;
}

static void set_rule(state_t *s, const cie_t *c, uint64_t reg, enum how how, int64_t off) {
  if (reg == DW_REG_RBP)
    s->rbp = (uint8_t)how, s->rbp_off = sat32(off);
  else if (reg == c->ra_reg)
    s->ra = (uint8_t)how, s->ra_off = sat32(off);
}

/* Runs the instructions in [p, end) from `loc`, stopping before the first
 * advance past `pc`. `init` is the state after the CIE's instructions (for
 * DW_CFA_restore), NULL while running those. 0 on an instruction we do
 * not know. */
static int run(const uint8_t *p, const uint8_t *end, const cie_t *c, uintptr_t loc, uintptr_t pc,
               state_t *s, const state_t *init) {
  /* GCC nests DW_CFA_remember_state one deep (an epilogue in the middle of
   * a function); deeper nesting is left to the fallbacks. */
  enum { STATE_STACK = 4 };
  state_t saved[STATE_STACK];
  int nsaved = 0;
  while (p < end) {
    uint8_t op = *p++;
    uint64_t reg, delta = 0;
    int64_t off;
    switch (op & 0xc0) {
    case 0x40:
      delta = (op & 0x3f) * c->code_align;
      goto advance;
    case 0x80:
      off = (int64_t)uleb(&p, end) * c->data_align;
      set_rule(s, c, op & 0x3f, AT, off);
      continue;
    case 0xc0:
      reg = op & 0x3f;
      goto restore;
    }
    switch (op) {
    case 0x00:
      continue; /* DW_CFA_nop */
    case 0x01:  /* DW_CFA_set_loc */
      if (!read_encoded(&p, end, c->fde_enc, 0, &loc))
        return 0;
      if (loc > pc)
        return 1;
      continue;
    case 0x02:
      delta = *p++ * c->code_align;
      goto advance;
    case 0x03:
      delta = READ(uint16_t, p) * c->code_align;
      goto advance;
    case 0x04:
      delta = READ(uint32_t, p) * c->code_align;
      goto advance;
    case 0x05: /* DW_CFA_offset_extended */
      reg = uleb(&p, end);
      set_rule(s, c, reg, AT, (int64_t)uleb(&p, end) * c->data_align);
      continue;
    case 0x06:
      reg = uleb(&p, end);
      goto restore;
    case 0x07:
      set_rule(s, c, uleb(&p, end), UNDEFINED, 0);
      continue;
    case 0x08:
      set_rule(s, c, uleb(&p, end), SAME, 0);
      continue;
    case 0x09: /* DW_CFA_register */
      reg = uleb(&p, end);
      uleb(&p, end);
      set_rule(s, c, reg, OTHER, 0);
      continue;
    case 0x0a:
      if (nsaved == STATE_STACK)
        return 0;
      saved[nsaved++] = *s;
      continue;
    case 0x0b:
      if (nsaved == 0) /* the CFA comes back too, as libgcc restores it */
        return 0;
      *s = saved[--nsaved];
      continue;
    case 0x0c:
      s->cfa_reg = reg8(uleb(&p, end));
      s->cfa_off = (int64_t)uleb(&p, end);
      s->cfa_expr = NO_EXPR;
      continue;
    case 0x0d:
      s->cfa_reg = reg8(uleb(&p, end)), s->cfa_expr = NO_EXPR;
      continue;
    case 0x0e:
      s->cfa_off = (int64_t)uleb(&p, end);
      continue;
    case 0x0f: { /* DW_CFA_def_cfa_expression */
      uint64_t len = uleb(&p, end);
      if (len > (uint64_t)(end - p))
        return 0;
      s->cfa_expr = breg6_expr(p, p + len, 1, &off) ? DEREF_RBP_EXPR : OTHER_EXPR;
      s->cfa_off = s->cfa_expr == DEREF_RBP_EXPR ? off : 0;
      p += len;
      continue;
    }
    case 0x10:   /* DW_CFA_expression */
    case 0x16: { /* DW_CFA_val_expression */
      reg = uleb(&p, end);
      uint64_t len = uleb(&p, end);
      if (len > (uint64_t)(end - p))
        return 0;
      if (op == 0x10 && reg == DW_REG_RBP && breg6_expr(p, p + len, 0, &off))
        set_rule(s, c, reg, AT_RBP, off);
      else
        set_rule(s, c, reg, OTHER, 0);
      p += len;
      continue;
    }
    case 0x11: /* DW_CFA_offset_extended_sf */
      reg = uleb(&p, end);
      set_rule(s, c, reg, AT, sleb(&p, end) * c->data_align);
      continue;
    case 0x12:
      s->cfa_reg = reg8(uleb(&p, end));
      s->cfa_off = sleb(&p, end) * c->data_align;
      s->cfa_expr = NO_EXPR;
      continue;
    case 0x13:
      s->cfa_off = sleb(&p, end) * c->data_align;
      continue;
    case 0x14: /* DW_CFA_val_offset */
      reg = uleb(&p, end);
      uleb(&p, end);
      set_rule(s, c, reg, OTHER, 0);
      continue;
    case 0x15: /* DW_CFA_val_offset_sf */
      reg = uleb(&p, end);
      sleb(&p, end);
      set_rule(s, c, reg, OTHER, 0);
      continue;
    case 0x2e:
      uleb(&p, end);
      continue; /* DW_CFA_GNU_args_size */
#if CPROF_ARCH_LINK_REGISTER
    case 0x2d: /* DW_CFA_AARCH64_negate_ra_state: x30 is signed (PAC) from here, or no
                * longer; the walker strips every return address (arch.h) either way */
      continue;
#endif
    case 0x2f:  /* DW_CFA_GNU_negative_offset_extended */
      reg = uleb(&p, end);
      set_rule(s, c, reg, AT, -(int64_t)uleb(&p, end) * c->data_align);
      continue;
    default:
      return 0;
    }
  advance:
    loc += delta;
    if (loc > pc)
      return 1;
    continue;
  restore:
    if (!init)
      return 0;
    if (reg == DW_REG_RBP)
      s->rbp = init->rbp, s->rbp_off = init->rbp_off;
    else if (reg == c->ra_reg)
      s->ra = init->ra, s->ra_off = init->ra_off;
  }
  return 1;
}

/* The rule of the FDE at `fde` for `pc`; *start, when not NULL, is set to
 * the first pc the FDE describes. */
static uint64_t rule_in_fde(const uint8_t *fde, uintptr_t pc, uintptr_t *start_out) {
  uint32_t len, cie_off;
  memcpy(&len, fde, sizeof len);
  if (len == 0 || len == 0xffffffff)
    return CPROF__RULE_UNSUPPORTED;
  const uint8_t *p = fde + 4, *end = fde + 4 + len;
  memcpy(&cie_off, p, sizeof cie_off);
  cie_t c;
  if (cie_off == 0 || !parse_cie(p - cie_off, &c))
    return CPROF__RULE_UNSUPPORTED;
  p += 4;
  uintptr_t start, range;
  if (!read_encoded(&p, end, c.fde_enc, 0, &start) ||
      !read_encoded(&p, end, c.fde_enc & 0x0f, 0, &range))
    return CPROF__RULE_UNSUPPORTED;
  if (pc < start || pc - start >= range)
    return CPROF__RULE_NOT_FOUND; /* in no function the tables describe */
  if (start_out)
    *start_out = start;
  if (c.augmented)
    p += uleb(&p, end);
  if (c.signal) /* a trampoline: where it is in its FDE, for the walker's check */
    return pc - start > 0xffff || range > 0xffffffff
               ? CPROF__RULE_UNSUPPORTED
               : (uint64_t)CPROF__RULE_SIGNAL | (uint64_t)(pc - start) << 16 |
                     (uint64_t)(start + range - pc) << 32;

  state_t s = {.cfa_reg = DW_REG_RSP, .rbp = SAME, .ra = SAME}, init;
  if (!run(c.insns, c.end, &c, start, pc, &s, NULL))
    return CPROF__RULE_UNSUPPORTED;
  init = s;
  if (!run(p, end, &c, start, pc, &s, &init))
    return CPROF__RULE_UNSUPPORTED;

  if (s.ra == UNDEFINED)
    return CPROF__RULE_OUTERMOST; /* thread entry points mark the end of the stack so */
  /* The return address saved at CFA + offset (CFA - 8 on x86-64, where the
   * call pushed it), or, on aarch64, not saved yet: still in x30. */
  enum cprof__ra_rule ra;
  if (s.ra == AT)
    ra = CPROF__RA_AT_CFA;
  else if (CPROF_ARCH_LINK_REGISTER && s.ra == SAME)
    ra = CPROF__RA_IN_LR;
  else
    return CPROF__RULE_UNSUPPORTED;
  if (!cprof__rule_fits(s.cfa_off, s.rbp == SAME ? 0 : s.rbp_off,
                        ra == CPROF__RA_AT_CFA ? s.ra_off : 0))
    return CPROF__RULE_UNSUPPORTED;
  enum cprof__rule_kind k;
  if (s.cfa_expr == DEREF_RBP_EXPR)
    k = CPROF__RULE_DEREF_RBP;
  else if (s.cfa_expr == NO_EXPR && s.cfa_reg == DW_REG_RSP)
    k = CPROF__RULE_FROM_RSP;
  else if (s.cfa_expr == NO_EXPR && s.cfa_reg == DW_REG_RBP)
    k = CPROF__RULE_FROM_RBP;
  else if (s.cfa_expr == NO_EXPR && s.cfa_reg < CPROF_ARCH_DW_REGS)
    k = CPROF__RULE_FROM_REG; /* %r10 in a realigning prologue, say */
  else
    return CPROF__RULE_UNSUPPORTED;
  if (s.rbp != SAME && s.rbp != AT && s.rbp != AT_RBP)
    return CPROF__RULE_UNSUPPORTED;
  enum cprof__rbp_rule rbp = s.rbp == AT       ? CPROF__RBP_AT_CFA
                             : s.rbp == AT_RBP ? CPROF__RBP_AT_RBP
                                               : CPROF__RBP_SAME;
  return cprof__rule_pack(k, (int32_t)s.cfa_off, rbp, rbp == CPROF__RBP_SAME ? 0 : s.rbp_off,
                          k == CPROF__RULE_FROM_REG ? (unsigned)s.cfa_reg : 0, ra,
                          ra == CPROF__RA_AT_CFA ? s.ra_off : 0);
}

/* The loaded module that holds `pc`, from _dl_find_object (lock-free and
 * async-signal-safe in glibc's manual; it lists only objects that are
 * loaded). Its own frame, which holds glibc's 96-byte answer, is gone
 * before the caller runs a call-frame program: the handler's stack use on
 * a cache miss stays small (doc/internals.md). 0 when no module does. */
__attribute__((noinline)) int cprof__cfa_module_of(uintptr_t pc, cprof__cfa_module_t *out) {
  struct dl_find_object o;
  if (_dl_find_object((void *)pc, &o) != 0)
    return 0;
  *out = (cprof__cfa_module_t){(uintptr_t)o.dlfo_map_start, (uintptr_t)o.dlfo_map_end,
                               o.dlfo_eh_frame};
  return 1;
}

/* The rule for `pc`, from the tables of the module that holds it; *start
 * as for rule_in_fde. */
uint64_t cprof__cfa_find_rule(uintptr_t pc, uintptr_t *start) {
  cprof__cfa_module_t mod;
  if (!cprof__cfa_module_of(pc, &mod) || !mod.eh_frame)
    return CPROF__RULE_NOT_FOUND;
  const uint8_t *hdr = mod.eh_frame, *p = hdr + 4, *end = p + 16;
  uintptr_t base = (uintptr_t)hdr, ignored, count;
  /* Version 1, and the table as every linker writes it: pairs of 4-byte
   * signed offsets from the header's start (DW_EH_PE_datarel|sdata4). */
  if (hdr[0] != 1 || hdr[3] != 0x3b || !read_encoded(&p, end, hdr[1], base, &ignored) ||
      !read_encoded(&p, end, hdr[2], base, &count) || count == 0)
    return CPROF__RULE_UNSUPPORTED;
  /* The entry is the last whose first pc is <= pc. */
  size_t n = CPROF__PARTITION_POINT(count, i, base + (intptr_t)s32_at(p + i * 8) <= pc);
  if (n == 0)
    return CPROF__RULE_NOT_FOUND;
  return rule_in_fde((const uint8_t *)(base + (intptr_t)s32_at(p + (n - 1) * 8 + 4)), pc, start);
}
