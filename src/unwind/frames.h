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
 * after about CPROF_UNWIND_MAX_FRAMES frames whatever happens, so that an
 * endless recursion cannot make a handler slow: a stack deeper than that
 * keeps its innermost frames and CPROF_PC_ELIDED(0), "frames elided, how
 * many not known", and no outer frames (the ring's are not the outermost).
 *
 * A walker asks for room before each frame (cprof__frames_room: false when
 * the walk must stop) and then puts it (cprof__frames_put): while the
 * array fills, that is a compare and a store, what the walks did before
 * they kept outer frames; the ring's bookkeeping runs once per lap of it.
 *
 * Pure and inline: signal-safe. */
#ifndef CPROF_UNWIND_FRAMES_H
#define CPROF_UNWIND_FRAMES_H

#include <stdint.h>

#include "unwind/pc.h"

/* The most frames any walk follows (give or take a lap of the ring): about
 * 4096 cache probes and 8192 loads for the signal handlers' walker, tens
 * of microseconds; four times the deepest CPROF_MAX_DEPTH. */
#define CPROF_UNWIND_MAX_FRAMES 4096

typedef struct cprof__frames {
  uintptr_t *out;  /* where frames go: the array, then the ring in its tail */
  int n, room;     /* frames in out, and its length */
  uint32_t before; /* frames found before this lap of the ring; 0 while the array fills */
  int max;         /* the array's length */
  int stopped;     /* the walk stopped at its bound, or had no room at all */
} cprof__frames_t;

static inline __attribute__((always_inline)) void cprof__frames_init(cprof__frames_t *f,
                                                                     uintptr_t *pcs, int max) {
  *f = (cprof__frames_t){.out = pcs, .room = max > 0 ? max : 0, .max = max};
}

/* Whether the array is still filling, and the array. */
static inline int cprof__frames_filling(const cprof__frames_t *f) { return f->before == 0; }
static inline uintptr_t *cprof__frames_array(const cprof__frames_t *f) {
  return f->out + f->room - (cprof__frames_filling(f) ? f->room : f->max);
}

/* Frames kept innermost, and outermost, when the stack is deeper than the
 * array: the marker between them. */
static inline int cprof__frames_outer(int max) { return max / 4; }
static inline int cprof__frames_inner(int max) { return max - 1 - cprof__frames_outer(max); }

/* The array is full, or a lap of the ring: go on into the ring, or stop
 * (for good: the walk's bound, or an array too short for the marker). */
static inline __attribute__((always_inline)) int cprof__frames_wrap(cprof__frames_t *f) {
  if (f->stopped)
    return 0;
  int filling = cprof__frames_filling(f);
  uint32_t found = filling ? (uint32_t)f->n : f->before + (uint32_t)f->n;
  if (f->max < 2 || found >= CPROF_UNWIND_MAX_FRAMES) {
    f->stopped = 1;
    return 0;
  }
  if (filling) {
    /* The ring: the array's tail after the marker's slot (or, with no
     * outer frames to keep, that slot alone, overwritten at the end). */
    int outer = cprof__frames_outer(f->max);
    f->room = outer > 0 ? outer : 1;
    f->out += f->max - f->room;
  }
  f->before = found;
  f->n = 0;
  return 1;
}

/* Whether there is room for one more frame: false when the walk must stop. */
static inline __attribute__((always_inline)) int cprof__frames_room(cprof__frames_t *f) {
  return __builtin_expect(f->n < f->room, 1) || cprof__frames_wrap(f);
}

/* Puts a frame, after cprof__frames_room said there was room. */
static inline __attribute__((always_inline)) void cprof__frames_put(cprof__frames_t *f,
                                                                    uintptr_t pc) {
  f->out[f->n++] = pc;
}

/* Puts a frame if there is room. */
static inline __attribute__((always_inline)) void cprof__frames_add(cprof__frames_t *f,
                                                                    uintptr_t pc) {
  if (cprof__frames_room(f))
    cprof__frames_put(f, pc);
}

static inline void cprof__frames_reverse(uintptr_t *a, int n) {
  for (int i = 0, j = n - 1; i < j; i++, j--) {
    uintptr_t t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
}

/* The end of a walk that went into the ring: out of line, and given the
 * walk's state by value, so that the walkers keep theirs in registers.
 * The ring's oldest frame is at n (the lap before this one left it). */
static __attribute__((noinline, unused)) int cprof__frames_finish(uintptr_t *pcs, int max, int n,
                                                                  uint32_t before, int whole) {
  int inner = cprof__frames_inner(max), outer = cprof__frames_outer(max);
  if (!whole) { /* more stack above, not walked: how much is not known */
    pcs[inner] = CPROF_PC_ELIDED(0);
    return inner + 1;
  }
  if (outer > 0) {
    uintptr_t *ring = pcs + inner + 1;
    cprof__frames_reverse(ring, n);
    cprof__frames_reverse(ring + n, outer - n);
    cprof__frames_reverse(ring, outer);
  }
  pcs[inner] = CPROF_PC_ELIDED(before + (uint32_t)n - (uint32_t)(max - 1));
  return max;
}

/* Ends the walk: returns the depth. `whole` says the walk found the end of
 * the stack (or cut it, with CPROF_PC_STACK_CUT put last); 0 when it
 * stopped with more stack above. */
static inline __attribute__((always_inline)) int cprof__frames_end(cprof__frames_t *f, int whole) {
  whole = whole && !f->stopped;
  if (__builtin_expect(cprof__frames_filling(f), 1)) { /* the array did not fill */
    if (whole || f->n == 0 || f->max < 2)
      return f->n;
    int at = f->n < f->max ? f->n : cprof__frames_inner(f->max);
    f->out[at] = CPROF_PC_ELIDED(0);
    return at + 1;
  }
  return cprof__frames_finish(cprof__frames_array(f), f->max, f->n, f->before, whole);
}

/* How many frames the walk found, all told. */
static inline uint32_t cprof__frames_seen(const cprof__frames_t *f) {
  return f->before + (uint32_t)f->n;
}

/* How many of the walk's first frames lead pcs, in order: all it found,
 * or those before the marker. */
static inline int cprof__frames_leading(const cprof__frames_t *f) {
  return cprof__frames_filling(f) ? f->n : cprof__frames_inner(f->max);
}

#endif
