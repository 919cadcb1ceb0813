/* The cached DWARF unwinder (see cfa.h).
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

/* DWARF register numbers on x86-64 (System V psABI, figure 3.36). */
enum { REG_RBP = 6, REG_RSP = 7 };

/* A rule, packed in a word so that the cache holds it whole:
 * bits 0-1 the kind, bit 2 whether %rbp is saved, bits 16-31 where (from
 * the CFA), bits 32-63 the CFA's offset from its base register. */
enum kind { UNSUPPORTED = 0, FROM_RSP = 1, FROM_RBP = 2, OUTERMOST = 3 };

static uint64_t pack(enum kind k, int32_t cfa_off, int rbp_saved, int16_t rbp_off) {
  return (uint64_t)k | (uint64_t)(rbp_saved != 0) << 2 | (uint64_t)(uint16_t)rbp_off << 16 |
         (uint64_t)(uint32_t)cfa_off << 32;
}
static enum kind kind_of(uint64_t r) { return (enum kind)(r & 3); }
static int64_t cfa_off_of(uint64_t r) { return (int32_t)(uint32_t)(r >> 32); }
static int rbp_saved_of(uint64_t r) { return (r >> 2) & 1; }
static int64_t rbp_off_of(uint64_t r) { return (int16_t)(uint16_t)(r >> 16); }

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
  size_t n = strnlen(aug, (size_t)(end - p));
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

enum how { SAME = 0, AT, UNDEFINED, OTHER };

typedef struct state {
  uint64_t cfa_reg;
  int64_t cfa_off;
  int cfa_expr;
  enum how rbp, ra;
  int64_t rbp_off, ra_off;
} state_t;

static void set_rule(state_t *s, const cie_t *c, uint64_t reg, enum how how, int64_t off) {
  if (reg == REG_RBP)
    s->rbp = how, s->rbp_off = off;
  else if (reg == c->ra_reg)
    s->ra = how, s->ra_off = off;
}

/* Runs the instructions in [p, end) from `loc`, stopping before the first
 * advance past `pc`. `init` is the state after the CIE's instructions (for
 * DW_CFA_restore), NULL while running those. 0 on an instruction we do
 * not know. */
static int run(const uint8_t *p, const uint8_t *end, const cie_t *c, uintptr_t loc, uintptr_t pc,
               state_t *s, const state_t *init) {
  state_t saved[8];
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
      if (nsaved == (int)(sizeof saved / sizeof *saved))
        return 0;
      saved[nsaved++] = *s;
      continue;
    case 0x0b:
      if (nsaved == 0) /* the CFA comes back too, as libgcc restores it */
        return 0;
      *s = saved[--nsaved];
      continue;
    case 0x0c:
      s->cfa_reg = uleb(&p, end);
      s->cfa_off = (int64_t)uleb(&p, end);
      s->cfa_expr = 0;
      continue;
    case 0x0d: s->cfa_reg = uleb(&p, end), s->cfa_expr = 0; continue;
    case 0x0e: s->cfa_off = (int64_t)uleb(&p, end); continue;
    case 0x0f: /* DW_CFA_def_cfa_expression */
      p += uleb(&p, end);
      s->cfa_expr = 1;
      continue;
    case 0x10: /* DW_CFA_expression */
    case 0x16: /* DW_CFA_val_expression */
      reg = uleb(&p, end);
      p += uleb(&p, end);
      set_rule(s, c, reg, OTHER, 0);
      continue;
    case 0x11: /* DW_CFA_offset_extended_sf */
      reg = uleb(&p, end);
      set_rule(s, c, reg, AT, sleb(&p, end) * c->data_align);
      continue;
    case 0x12:
      s->cfa_reg = uleb(&p, end);
      s->cfa_off = sleb(&p, end) * c->data_align;
      s->cfa_expr = 0;
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
    if (reg == REG_RBP)
      s->rbp = init->rbp, s->rbp_off = init->rbp_off;
    else if (reg == c->ra_reg)
      s->ra = init->ra, s->ra_off = init->ra_off;
  }
  return 1;
}

/* The rule of the FDE at `fde` for `pc`. */
static uint64_t rule_in_fde(const uint8_t *fde, uintptr_t pc) {
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
    return OUTERMOST; /* in no function the tables describe */
  if (c.augmented)
    p += uleb(&p, end);
  if (c.signal)
    return UNSUPPORTED;

  state_t s = {.cfa_reg = REG_RSP, .rbp = SAME, .ra = SAME}, init;
  if (!run(c.insns, c.end, &c, start, pc, &s, NULL))
    return UNSUPPORTED;
  init = s;
  if (!run(p, end, &c, start, pc, &s, &init))
    return UNSUPPORTED;

  if (s.ra == UNDEFINED)
    return OUTERMOST; /* thread entry points mark the end of the stack so */
  if (s.cfa_expr || (s.cfa_reg != REG_RSP && s.cfa_reg != REG_RBP) || s.ra != AT ||
      s.ra_off != -8 || s.cfa_off != (int32_t)s.cfa_off)
    return UNSUPPORTED;
  if (s.rbp != SAME && s.rbp != AT)
    return UNSUPPORTED;
  if (s.rbp == AT && s.rbp_off != (int16_t)s.rbp_off)
    return UNSUPPORTED;
  return pack(s.cfa_reg == REG_RSP ? FROM_RSP : FROM_RBP, (int32_t)s.cfa_off, s.rbp == AT,
              (int16_t)s.rbp_off);
}

/* The rule for `pc`, from the tables of the module that holds it. */
static uint64_t find_rule(uintptr_t pc) {
  struct dl_find_object o;
  if (_dl_find_object((void *)pc, &o) != 0 || !o.dlfo_eh_frame)
    return OUTERMOST;
  const uint8_t *hdr = o.dlfo_eh_frame, *p = hdr + 4, *end = p + 16;
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
    return OUTERMOST;
  return rule_in_fde((const uint8_t *)(base + (intptr_t)fde), pc);
}

/* ---- the cache ----
 *
 * Direct-mapped, each slot guarded by a sequence number: odd while a writer
 * fills it. A reader that sees it odd, or changed across its reads, treats
 * the slot as a miss; a writer that finds it odd leaves it to the other. So
 * nobody waits, and a fork in the middle of a write costs only that slot. */

#define CACHE_BITS 12

typedef struct slot {
  uint32_t seq;
  uintptr_t pc;
  uint64_t rule;
} slot_t;

static slot_t cache[1 << CACHE_BITS];

static slot_t *slot_of(uintptr_t pc) {
  return &cache[(pc * 0x9e3779b97f4a7c15ull) >> (64 - CACHE_BITS)];
}

static uint64_t rule_of(uintptr_t pc) {
  slot_t *s = slot_of(pc);
  uint32_t seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
  if (!(seq & 1)) {
    uintptr_t key = __atomic_load_n(&s->pc, __ATOMIC_RELAXED);
    uint64_t rule = __atomic_load_n(&s->rule, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (key == pc && __atomic_load_n(&s->seq, __ATOMIC_RELAXED) == seq)
      return rule;
  }
  uint64_t rule = find_rule(pc);
  if (!(seq & 1) && __atomic_compare_exchange_n(&s->seq, &seq, seq + 1, 0, __ATOMIC_RELAXED,
                                                __ATOMIC_RELAXED)) {
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&s->pc, pc, __ATOMIC_RELAXED);
    __atomic_store_n(&s->rule, rule, __ATOMIC_RELAXED);
    __atomic_store_n(&s->seq, seq + 2, __ATOMIC_RELEASE);
  }
  return rule;
}

/* ---- the walk ---- */

__attribute__((noinline)) int cprof__unwind_cfa_here(uintptr_t *pcs, int max, uintptr_t from,
                                                     uintptr_t stack_hi, cprof__cfa_memo_t *memo) {
  uintptr_t pc, sp, bp;
  /* Where we are: this function's own frame is the first to step over. */
  __asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
                   : "=r"(pc), "=r"(sp), "=r"(bp));
  int n = 0, started = from == 0;
  for (int frames = 0; n < max && frames < 4 * max + 64; frames++) {
    uint64_t rule;
    if (!memo || frames >= CPROF_CFA_MEMO) {
      rule = rule_of(pc);
    } else if (memo->pc[frames] == pc) {
      rule = memo->rule[frames];
    } else {
      rule = rule_of(pc);
      memo->pc[frames] = pc;
      memo->rule[frames] = rule;
    }
    enum kind k = kind_of(rule);
    if (k == UNSUPPORTED)
      return -1;
    if (k == OUTERMOST)
      break;
    uintptr_t cfa = (k == FROM_RSP ? sp : bp) + (uintptr_t)cfa_off_of(rule);
    /* Each frame lies above the last and below the stack's top. */
    if (cfa <= sp || cfa > stack_hi || (cfa & 7))
      break;
    uintptr_t ret = ((const uintptr_t *)cfa)[-1];
    if (rbp_saved_of(rule)) {
      uintptr_t at = cfa + (uintptr_t)rbp_off_of(rule);
      if (at < sp || at + 8 > stack_hi)
        break;
      bp = *(const uintptr_t *)at;
    }
    sp = cfa;
    if (ret == 0)
      break;
    started |= ret == from;
    if (started)
      pcs[n++] = ret;
    pc = ret - 1; /* inside the call, which may be a function's last instruction */
  }
  return n;
}
