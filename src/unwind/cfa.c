/* The cached DWARF unwinder (see cfa.h): the heap sampler's walk from
 * its own frames, and the signal handlers' walk from an interrupted
 * context.
 *
 * For a pc, the rule comes from the module's .eh_frame_hdr (found with
 * _dl_find_object): a sorted table of (first pc, FDE) pairs, searched by
 * bisection; then the FDE's CIE gives the initial rules and the encodings,
 * and the CIE's and FDE's call-frame instructions are run up to the pc.
 * Formats: the "Exception Frame" chapter of the Linux Standard Base Core
 * specification, and DWARF 5 section 6.4. Only the rules for the CFA, %rbp
 * and the return address are kept: the other registers never matter for
 * finding the next frame of compiled x86-64 code. */
#include "unwind/cfa.h"

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

#include "unwind/bounds.h"
#include "unwind/frames.h"
#include "unwind/pc.h"
#include "unwind/unload.h"
#include "unwind/unwind.h"

/* DWARF register numbers on x86-64 (System V psABI, figure 3.36). */
enum { DW_REG_RBP = 6, DW_REG_RSP = 7 };

/* A rule, packed in a word so that the cache holds it whole:
 * bits 0-2 the kind, bits 3-4 where %rbp is saved, bits 5-9 the CFA's base
 * register for FROM_REG, bits 16-31 where %rbp is saved (from the CFA, or
 * from %rbp), bits 32-63 the CFA's offset from its base. For SIGNAL, bits
 * 16-31 and 32-63 hold instead how far the pc is from the start and from
 * the end of the trampoline's FDE. */
enum kind {
  UNSUPPORTED = 0, /* a rule beyond this walker: expressions, other registers */
  FROM_RSP = 1,    /* CFA = %rsp + offset */
  FROM_RBP = 2,    /* CFA = %rbp + offset */
  OUTERMOST = 3,   /* the return address is undefined: the stack ends here */
  NOT_FOUND = 4,   /* the pc is in no function the unwind tables describe */
  SIGNAL = 5,      /* a signal trampoline: the FDE's CIE has augmentation 'S' */
  DEREF_RBP = 6,   /* CFA = *(%rbp + offset): GCC's realigned frames (DRAP) */
  FROM_REG = 7,    /* CFA = another register + offset: only where all are known */
};
enum rbp_rule { RBP_SAME = 0, RBP_AT_CFA = 1, RBP_AT_RBP = 2 };

static uint64_t pack(enum kind k, int32_t cfa_off, enum rbp_rule rbp, int16_t rbp_off,
                     unsigned reg) {
  return (uint64_t)k | (uint64_t)rbp << 3 | (uint64_t)(reg & 31) << 5 |
         (uint64_t)(uint16_t)rbp_off << 16 | (uint64_t)(uint32_t)cfa_off << 32;
}
static enum kind kind_of(uint64_t r) { return (enum kind)(r & 7); }
static int64_t cfa_off_of(uint64_t r) { return (int32_t)(uint32_t)(r >> 32); }
static enum rbp_rule rbp_rule_of(uint64_t r) { return (enum rbp_rule)((r >> 3) & 3); }
static int64_t rbp_off_of(uint64_t r) { return (int16_t)(uint16_t)(r >> 16); }
static unsigned reg_of(uint64_t r) { return (r >> 5) & 31; }

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

#define READ(type, p)                                                                             \
  ({                                                                                              \
    type v_;                                                                                      \
    memcpy(&v_, p, sizeof v_);                                                                    \
    p += sizeof v_;                                                                               \
    v_;                                                                                           \
  })

/* A pointer in one of the DW_EH_PE encodings: absolute, pc-relative or
 * relative to `datarel` (.eh_frame_hdr's start), never indirect. 0 for
 * an encoding we do not read. */
static int read_encoded(const uint8_t **pp, const uint8_t *end, uint8_t enc, uintptr_t datarel,
                        uintptr_t *out) {
  const uint8_t *p = *pp;
  uintptr_t base, v;
  switch (enc & 0x70) {
  case 0x00: base = 0; break;
  case 0x10: base = (uintptr_t)p; break;
  case 0x30: base = datarel; break;
  default: return 0;
  }
  if ((enc & 0x80) || ((enc & 0x70) == 0x30 && !datarel))
    return 0;
  switch (enc & 0x0f) {
  case 0x00: v = READ(uint64_t, p); break;
  case 0x01: v = uleb(&p, end); break;
  case 0x02: v = READ(uint16_t, p); break;
  case 0x03: v = READ(uint32_t, p); break;
  case 0x04: v = READ(uint64_t, p); break;
  case 0x09: v = (uintptr_t)sleb(&p, end); break;
  case 0x0a: v = (uintptr_t)(int64_t)READ(int16_t, p); break;
  case 0x0b: v = (uintptr_t)(int64_t)READ(int32_t, p); break;
  case 0x0c: v = (uintptr_t)READ(int64_t, p); break;
  default: return 0;
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
      case 'R': out->fde_enc = *p++; break;
      case 'L': p++; break;
      case 'P': {
        uint8_t enc = *p++;
        if (!read_encoded(&p, aend, enc & 0x7f, 0, &ignored))
          return 0;
        break;
      }
      case 'S': out->signal = 1; break;
      case 'B': break;
      default: return 0;
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
enum { DW_OP_deref = 0x06, DW_OP_breg6 = 0x76 };

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
    case 0x40: delta = (op & 0x3f) * c->code_align; goto advance;
    case 0x80:
      off = (int64_t)uleb(&p, end) * c->data_align;
      set_rule(s, c, op & 0x3f, AT, off);
      continue;
    case 0xc0: reg = op & 0x3f; goto restore;
    }
    switch (op) {
    case 0x00: continue; /* DW_CFA_nop */
    case 0x01:           /* DW_CFA_set_loc */
      if (!read_encoded(&p, end, c->fde_enc, 0, &loc))
        return 0;
      if (loc > pc)
        return 1;
      continue;
    case 0x02: delta = *p++ * c->code_align; goto advance;
    case 0x03: delta = READ(uint16_t, p) * c->code_align; goto advance;
    case 0x04: delta = READ(uint32_t, p) * c->code_align; goto advance;
    case 0x05: /* DW_CFA_offset_extended */
      reg = uleb(&p, end);
      set_rule(s, c, reg, AT, (int64_t)uleb(&p, end) * c->data_align);
      continue;
    case 0x06: reg = uleb(&p, end); goto restore;
    case 0x07: set_rule(s, c, uleb(&p, end), UNDEFINED, 0); continue;
    case 0x08: set_rule(s, c, uleb(&p, end), SAME, 0); continue;
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
    case 0x0e: s->cfa_off = (int64_t)uleb(&p, end); continue;
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
    case 0x13: s->cfa_off = sleb(&p, end) * c->data_align; continue;
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
    case 0x2e: uleb(&p, end); continue; /* DW_CFA_GNU_args_size */
    case 0x2f:                          /* DW_CFA_GNU_negative_offset_extended */
      reg = uleb(&p, end);
      set_rule(s, c, reg, AT, -(int64_t)uleb(&p, end) * c->data_align);
      continue;
    default: return 0;
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
    return UNSUPPORTED;
  const uint8_t *p = fde + 4, *end = fde + 4 + len;
  memcpy(&cie_off, p, sizeof cie_off);
  cie_t c;
  if (cie_off == 0 || !parse_cie(p - cie_off, &c))
    return UNSUPPORTED;
  p += 4;
  uintptr_t start, range;
  if (!read_encoded(&p, end, c.fde_enc, 0, &start) ||
      !read_encoded(&p, end, c.fde_enc & 0x0f, 0, &range))
    return UNSUPPORTED;
  if (pc < start || pc - start >= range)
    return NOT_FOUND; /* in no function the tables describe */
  if (start_out)
    *start_out = start;
  if (c.augmented)
    p += uleb(&p, end);
  if (c.signal) /* a trampoline: where it is in its FDE, for the walker's check */
    return pc - start > 0xffff || range > 0xffffffff
               ? UNSUPPORTED
               : (uint64_t)SIGNAL | (uint64_t)(pc - start) << 16 |
                     (uint64_t)(start + range - pc) << 32;

  state_t s = {.cfa_reg = DW_REG_RSP, .rbp = SAME, .ra = SAME}, init;
  if (!run(c.insns, c.end, &c, start, pc, &s, NULL))
    return UNSUPPORTED;
  init = s;
  if (!run(p, end, &c, start, pc, &s, &init))
    return UNSUPPORTED;

  if (s.ra == UNDEFINED)
    return OUTERMOST; /* thread entry points mark the end of the stack so */
  if (s.ra != AT || s.ra_off != -8 || s.cfa_off != (int32_t)s.cfa_off)
    return UNSUPPORTED;
  enum kind k;
  if (s.cfa_expr == DEREF_RBP_EXPR)
    k = DEREF_RBP;
  else if (s.cfa_expr == NO_EXPR && s.cfa_reg == DW_REG_RSP)
    k = FROM_RSP;
  else if (s.cfa_expr == NO_EXPR && s.cfa_reg == DW_REG_RBP)
    k = FROM_RBP;
  else if (s.cfa_expr == NO_EXPR && s.cfa_reg < 16)
    k = FROM_REG; /* %r10 in a realigning prologue, say */
  else
    return UNSUPPORTED;
  if (s.rbp != SAME && s.rbp != AT && s.rbp != AT_RBP)
    return UNSUPPORTED;
  if (s.rbp != SAME && s.rbp_off != (int16_t)s.rbp_off)
    return UNSUPPORTED;
  enum rbp_rule rbp = s.rbp == AT ? RBP_AT_CFA : s.rbp == AT_RBP ? RBP_AT_RBP : RBP_SAME;
  return pack(k, (int32_t)s.cfa_off, rbp, (int16_t)(rbp == RBP_SAME ? 0 : s.rbp_off),
              k == FROM_REG ? (unsigned)s.cfa_reg : 0);
}

/* A module as the dynamic linker lists it now. */
typedef struct module {
  uintptr_t start, end;    /* its mapped range */
  const uint8_t *eh_frame; /* its .eh_frame_hdr, or NULL */
} module_t;

/* The loaded module that holds `pc`, from _dl_find_object (lock-free and
 * async-signal-safe in glibc's manual; it lists only objects that are
 * loaded). Its own frame, which holds glibc's 96-byte answer, is gone
 * before the caller runs a call-frame program: the handler's stack use on
 * a cache miss stays small (doc/internals.md). 0 when no module does. */
__attribute__((noinline)) static int module_of(uintptr_t pc, module_t *out) {
  struct dl_find_object o;
  if (_dl_find_object((void *)pc, &o) != 0)
    return 0;
  *out = (module_t){(uintptr_t)o.dlfo_map_start, (uintptr_t)o.dlfo_map_end, o.dlfo_eh_frame};
  return 1;
}

/* The rule for `pc`, from the tables of the module that holds it; *start
 * as for rule_in_fde. */
static uint64_t find_rule(uintptr_t pc, uintptr_t *start) {
  module_t mod;
  if (!module_of(pc, &mod) || !mod.eh_frame)
    return NOT_FOUND;
  const uint8_t *hdr = mod.eh_frame, *p = hdr + 4, *end = p + 16;
  uintptr_t base = (uintptr_t)hdr, ignored, count;
  /* Version 1, and the table as every linker writes it: pairs of 4-byte
   * signed offsets from the header's start (DW_EH_PE_datarel|sdata4). */
  if (hdr[0] != 1 || hdr[3] != 0x3b || !read_encoded(&p, end, hdr[1], base, &ignored) ||
      !read_encoded(&p, end, hdr[2], base, &count) || count == 0)
    return UNSUPPORTED;
  size_t lo = 0, hi = count;
  while (hi - lo > 1) { /* the last entry whose first pc is <= pc */
    size_t mid = lo + (hi - lo) / 2;
    int32_t first;
    memcpy(&first, p + mid * 8, sizeof first);
    if (base + (intptr_t)first <= pc)
      lo = mid;
    else
      hi = mid;
  }
  int32_t first, fde;
  memcpy(&first, p + lo * 8, sizeof first);
  memcpy(&fde, p + lo * 8 + 4, sizeof fde);
  if (base + (intptr_t)first > pc)
    return NOT_FOUND;
  return rule_in_fde((const uint8_t *)(base + (intptr_t)fde), pc, start);
}

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
  uint64_t rule = find_rule(pc, NULL);
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

/* Where DWARF register n (System V psABI, figure 3.36) is in a gregset_t. */
static const unsigned char greg_of_dwarf[16] = {
    REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI, REG_RBP, REG_RSP,
    REG_R8,  REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15};

/* Steps from the frame `r` to its caller with the frame's rule, reading only
 * in [r->sp, hi): the caller's pc (a return address), sp and %rbp. `g` is
 * every register of the frame, where known (a frame a signal interrupted),
 * else NULL. 0 when the rule is not one to step with, or would read out of
 * bounds: each frame lies above the last and below the stack's top. */
CPROF_READS_STACK static inline __attribute__((always_inline)) int
step(uint64_t rule, regs_t *r, uintptr_t hi, const greg_t *g) {
  uintptr_t cfa, ret, at = 0, bp = r->bp;
  switch (kind_of(rule)) {
  case FROM_RSP:
    cfa = r->sp + (uintptr_t)cfa_off_of(rule);
    break;
  case FROM_RBP:
    cfa = r->bp + (uintptr_t)cfa_off_of(rule);
    break;
  case FROM_REG:
    if (!g || reg_of(rule) >= 16)
      return 0;
    cfa = (uintptr_t)g[greg_of_dwarf[reg_of(rule)]] + (uintptr_t)cfa_off_of(rule);
    break;
  case DEREF_RBP:
    if (!peek(r->bp + (uintptr_t)cfa_off_of(rule), r->sp, hi, &cfa))
      return 0;
    break;
  default: return 0;
  }
  if (cfa <= r->sp || cfa > hi || (cfa & 7))
    return 0;
  ret = ((const uintptr_t *)cfa)[-1];
  switch (rbp_rule_of(rule)) {
  case RBP_AT_CFA:
    at = cfa + (uintptr_t)rbp_off_of(rule);
    break;
  case RBP_AT_RBP:
    at = r->bp + (uintptr_t)rbp_off_of(rule);
    break;
  case RBP_SAME:
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
  if (kind_of(rule) != NOT_FOUND && step(rule, &next, hi, NULL) &&
      (!validate || next.pc == 0 || return_address_here(next.pc)))
    return (moved_t){next, 1};
  next = r;
  if (fp_step_here(&next, hi))
    return (moved_t){next, 2};
  return (moved_t){r, 0};
}

CPROF_READS_STACK __attribute__((noinline)) int cprof__unwind_cfa_here(uintptr_t *pcs, int max,
                                                                 uintptr_t from, uintptr_t stack_hi,
                                                                 cprof__cfa_memo_t *memo) {
  regs_t r;
  /* Where we are: this function's own frame is the first to step over. */
  __asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
                   : "=r"(r.pc), "=r"(r.sp), "=r"(r.bp));
  int started = from == 0, validate = 0, whole = 0;
  cprof__frames_t f;
  cprof__frames_init(&f, pcs, max);
  uint64_t tag = cprof__unload_tag(); /* the memo's keys are tagged as the cache's */
  uintptr_t last_pc = 0; /* a recursion returns to the same pc frame after frame */
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
    enum kind k = kind_of(rule);
    if (k == UNSUPPORTED || k == SIGNAL || k == FROM_REG)
      return -1; /* the caller walks from a context, which steps over those */
    if (k == OUTERMOST) {
      whole = 1;
      break;
    }
    if (__builtin_expect(k == NOT_FOUND || validate, 0) || !step(rule, &r, stack_hi, NULL)) {
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
  module_t mod;
  if (ret < 4096 || !module_of(ret - 1, &mod) || ret - 1 < mod.start || ret > mod.end)
    return 0;
  enum kind k = kind_of(rule_of(ret - 1, cprof__unload_tag()));
  if (k == NOT_FOUND)
    return 0;
  int straddles = ((ret - 8) ^ (ret - 1)) >= 4096;
  if (k == UNSUPPORTED || straddles) {
    uintptr_t start = UINTPTR_MAX; /* set only once ret - 1 is in the FDE's range */
    find_rule(ret - 1, &start);
    if (start == UINTPTR_MAX || (straddles && start > ret - 8))
      return 0;
  }
  unsigned char b[8];
  memcpy(b, (const void *)(ret - 8), sizeof b);
  return cprof__ends_in_call(b);
}

/* What the walk does where the rules cannot go on: take the return address
 * at the stack pointer, for a frame interrupted before it pushed anything
 * (a leaf, a PLT stub, the first instructions of a function); or follow the
 * frame-pointer chain one step. Each only when what it finds is a return
 * address. */
CPROF_READS_STACK static int leaf_step(regs_t *r, uintptr_t hi) {
  uintptr_t ret;
  if (!peek(r->sp, r->sp, hi, &ret) || !is_return_address(ret))
    return 0;
  *r = (regs_t){ret, r->sp + 8, r->bp};
  return 1;
}

CPROF_READS_STACK static int fp_step(regs_t *r, uintptr_t hi) {
  uintptr_t ret, bp;
  if (!peek(r->bp + 8, r->sp, hi, &ret) || !peek(r->bp, r->sp, hi, &bp) || !is_return_address(ret))
    return 0;
  *r = (regs_t){ret, r->bp + 16, bp};
  return 1;
}

/* The x86-64 Linux signal trampoline, glibc's __restore_rt: "mov $15,
 * %rax; syscall" (rt_sigreturn), the bytes libgcc's fallback for x86-64
 * Linux (linux-unwind.h) also recognises it by. */
static const unsigned char restore_rt[9] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};

/* memcmp(a, b, n) == 0, without a call out of this file in signal context
 * (a program linking cprof statically may bind its calls lazily). */
static int same_bytes(uintptr_t a, const unsigned char *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (((const unsigned char *)a)[i] != b[i])
      return 0;
  return 1;
}

/* Steps over a signal frame. `at` is the pc the rule was found for (r->pc,
 * or r->pc - 1 for a return address); the trampoline is looked for where
 * the pc says the thread is in it, and only inside its FDE's range. The
 * kernel's rt_sigframe then has the interrupted context's ucontext at the
 * stack pointer (arch/x86/include/asm/sigframe.h: the return address was
 * its first field, which the handler's return popped), whose
 * general-purpose registers are laid out as glibc's gregset_t. The rule
 * is looked up again, uncached (signal frames are rare): the trampoline's
 * range is then that of a module loaded now, whatever the cache held. */
CPROF_READS_STACK static int signal_step(uintptr_t at, int exact, regs_t *r, uintptr_t hi,
                                         const greg_t **regs) {
  uint64_t rule = find_rule(at, NULL);
  if (kind_of(rule) != SIGNAL)
    return 0;
  uintptr_t start = at - ((rule >> 16) & 0xffff), end = at + (rule >> 32);
  uintptr_t candidates[2] = {r->pc, exact ? r->pc - 7 : 0}; /* at the mov, at the syscall */
  int found = 0;
  for (int i = 0; i < 2 && !found; i++) {
    uintptr_t t = candidates[i];
    found = t >= start && t + sizeof restore_rt <= end && same_bytes(t, restore_rt, sizeof restore_rt);
  }
  if (!found)
    return 0;
  const ucontext_t *uc = (const ucontext_t *)r->sp;
  size_t need = offsetof(ucontext_t, uc_mcontext) + sizeof uc->uc_mcontext.gregs;
  if ((r->sp & 7) || r->sp > hi || hi - r->sp < need)
    return 0;
  const greg_t *g = uc->uc_mcontext.gregs;
  *r = (regs_t){(uintptr_t)g[REG_RIP], (uintptr_t)g[REG_RSP], (uintptr_t)g[REG_RBP]};
  *regs = g;
  return 1;
}

CPROF_READS_STACK static int walk_sigsafe(const ucontext_t *uc, const cprof__maps_t *stacks,
                                          uintptr_t *pcs, int max) {
  const greg_t *g = uc->uc_mcontext.gregs; /* all the registers, for exact frames */
  regs_t r = {(uintptr_t)g[REG_RIP], (uintptr_t)g[REG_RSP], (uintptr_t)g[REG_RBP]};
  const stack_t *alt = &uc->uc_stack;
  uintptr_t hi = cprof__stack_top_sigsafe(r.sp, alt, stacks);
  uint64_t tag = cprof__unload_tag();
  int exact = 1;    /* r.pc is where the thread is, not a return address */
  int validate = 0; /* the frame was reached by a fallback: check the rules' next step */
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
      if ((1u << kind_of(rule)) & (1u << FROM_RSP | 1u << FROM_RBP | 1u << DEREF_RBP)) {
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
    switch (kind_of(rule)) {
    case OUTERMOST:
      return cprof__frames_end(&f, 1);
    case FROM_REG:
      if (!exact)
        break; /* only %rsp and %rbp are known above the first frame */
      /* fall through */
    case FROM_RSP:
    case FROM_RBP:
    case DEREF_RBP:
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
    case SIGNAL:
      if (!signal_step(at, exact, &next, hi, &g))
        goto cut;
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
    default:
      break; /* UNSUPPORTED, NOT_FOUND: the fallbacks below */
    }
    if ((exact && leaf_step(&next, hi)) || fp_step(&next, hi)) {
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
    pcs[n++] = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    if (n < max)
      pcs[n++] = CPROF_PC_STACK_CUT;
  }
  cprof__unload_leave_sigsafe(e);
  return n;
}

int cprof__cfa_is_return_address_sigsafe(uintptr_t ret) { return is_return_address(ret); }
