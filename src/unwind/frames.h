/* Where a walk puts the frames it finds.
 *
 * A stack that fits in the walk's array is kept whole. One that does not
 * keeps its innermost frames, then CPROF_PC_ELIDED(n) (pc.h) for the n
 * frames left out, then its outermost frames, a quarter of the array: as
 * Go's traceback prints the innermost and the outermost frames of a deep
 * stack with "...N frames elided..." between (runtime/traceback.go, since
 * Go 1.21). So main and the frames above a deep recursion keep their share
 * of a profile, and the profile says where frames are missing.
 *
 * To find the outermost frames the walk goes on past the array, keeping
 * the last frames it found in a ring in the array's own tail, which is put
 * in order at the end by rotating it in place: no other memory, so a
 * signal handler's stack use does not grow with the depth. The walk stops
 * after CPROF_UNWIND_MAX_FRAMES frames whatever happens, so that an endless
 * recursion cannot make a handler slow: a stack deeper than that keeps its
 * innermost frames and CPROF_PC_ELIDED(0), "frames elided, how many not
 * known", and no outer frames (the ring's are not the outermost).
 *
 * Pure and inline: signal-safe. */
#ifndef CPROF_UNWIND_FRAMES_H
#define CPROF_UNWIND_FRAMES_H

#include <stdint.h>

#include "unwind/pc.h"

/* The most frames any walk follows: about 4096 cache probes and 8192
 * loads for the signal handlers' walker (tens of microseconds), four times
 * the deepest CPROF_MAX_DEPTH. */
#define CPROF_UNWIND_MAX_FRAMES 4096

typedef struct cprof__frames {
  uintptr_t *pcs;
  int max;       /* the array's length */
  int inner;     /* frames kept innermost once the stack is deeper than max */
  int next;      /* the ring's next slot, in [inner + 1, max) */
  uint32_t seen; /* frames found so far */
} cprof__frames_t;

static inline void cprof__frames_init(cprof__frames_t *f, uintptr_t *pcs, int max) {
  f->pcs = pcs;
  f->max = max > 0 ? max : 0;
  /* Room for a quarter of the frames outermost and the marker; an array of
   * one frame keeps the innermost alone. */
  f->inner = max >= 2 ? max - 1 - max / 4 : f->max;
  f->next = f->inner + 1;
  f->seen = 0;
}

/* Whether the walk should stop: its bound is reached. */
static inline int cprof__frames_done(const cprof__frames_t *f) {
  return f->seen >= CPROF_UNWIND_MAX_FRAMES || f->max == 0;
}

static inline void cprof__frames_push(cprof__frames_t *f, uintptr_t pc) {
  uint32_t i = f->seen++;
  if (__builtin_expect(i < (uint32_t)f->max, 1)) {
    f->pcs[i] = pc;
    return;
  }
  if (f->next >= f->max) /* no ring: the marker alone */
    return;
  f->pcs[f->next] = pc;
  if (++f->next == f->max)
    f->next = f->inner + 1;
}

static inline void cprof__frames_reverse(uintptr_t *a, int n) {
  for (int i = 0, j = n - 1; i < j; i++, j--) {
    uintptr_t t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
}

/* Ends the walk: returns the depth. `whole` says the walk found the end of
 * the stack (or cut it, with CPROF_PC_STACK_CUT pushed last); 0 when it
 * stopped at its bound with more stack above. */
static inline int cprof__frames_end(cprof__frames_t *f, int whole) {
  uint32_t max = (uint32_t)f->max;
  if (f->seen <= max && (whole || f->seen == 0))
    return (int)f->seen;
  if (max < 2) /* no room for a marker */
    return f->seen < max ? (int)f->seen : (int)max;
  if (!whole) { /* more stack above, not walked: how much is not known */
    int at = f->seen < max ? (int)f->seen : f->inner;
    f->pcs[at] = CPROF_PC_ELIDED(0);
    return at + 1;
  }
  /* The ring's oldest frame is at `next`: rotate it to the front. */
  uintptr_t *ring = f->pcs + f->inner + 1;
  int k = f->max - f->inner - 1, s = f->next - f->inner - 1;
  cprof__frames_reverse(ring, s);
  cprof__frames_reverse(ring + s, k - s);
  cprof__frames_reverse(ring, k);
  f->pcs[f->inner] = CPROF_PC_ELIDED(f->seen - (max - 1));
  return f->max;
}

/* How many of the walk's first frames lead pcs, in order: all it found,
 * or those before the marker. */
static inline int cprof__frames_leading(const cprof__frames_t *f) {
  return f->seen <= (uint32_t)f->max ? (int)f->seen : f->inner;
}

#endif
