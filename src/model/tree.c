/* The call tree, root first, that flame graphs and folded stacks are drawn
 * from: pprof's graph.newTree (github.com/google/pprof/internal/graph) with
 * every sample type kept.
 *
 * A sample walks from its outermost frame to its leaf. Each location gives
 * one frame a line, outer function first (lines[n_lines - 1]), so inlined
 * functions are nodes of their own; a location without lines gives one
 * frame. A frame is named as pprof's -functions names a node (NodeInfo's
 * NameComponents once Aggregate has dropped addresses, files and lines):
 * the function's name; without one, its mapping's base name in brackets,
 * "[libc.so.6]"; without a mapping file either, "<unknown>". Children are
 * told apart by name and file, so two static functions of one name in two
 * files stay two.
 *
 * The tree is built with loops only, never recursion, so a stack as deep as
 * a profile allows cannot overflow the C stack: a child is found in one
 * hash table keyed by (parent, name, file), and the children lists are
 * made and sorted at the end. */
#include "model/model.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/path.h"
#include "profile/table.h"

#define NONE UINT32_MAX

typedef struct frame {
  uint32_t name, file; /* interned strings */
} frame_t;

typedef struct node_info {
  uint32_t parent, name, file;
  uint32_t first_child, next_sibling; /* NONE ends a list */
  size_t n_children;
} node_info_t;

typedef struct builder {
  cprof__pf_tree_t *t;
  cprof__arena_t *a;
  /* Names and files, each once, copied into the tree's arena. */
  const char **strs;
  size_t n_strs, cap_strs;
  cprof__table_t str_index;
  /* The nodes; info[i] is nodes[i]'s place in the tree. */
  cprof__pf_tree_node_t **nodes;
  node_info_t *info;
  size_t n_nodes, cap_nodes;
  cprof__table_t children;
  /* The frames of the current profile's locations, made once a location:
   * loc_first[i] (NONE until made) and loc_n[i] index frames[]. */
  const cprof__pf_t *p;
  uint32_t *loc_first, *loc_n;
  frame_t *frames;
  size_t n_frames, cap_frames;
  /* Scratch: frames of a location outside p->locations, and a name. */
  frame_t *tmp;
  size_t cap_tmp;
  char *name_buf;
  size_t cap_name;
} builder_t;

/* ---- strings ----------------------------------------------------------- */

static uint64_t str_hash(const char *s) { return cprof__hash_bytes(CPROF_HASH_SEED, s, strlen(s)); }

static int str_eq(const void *ctx, uint32_t value, const void *key) {
  return strcmp(((const builder_t *)ctx)->strs[value], key) == 0;
}

static int intern(builder_t *b, const char *s, uint32_t *out) {
  s = s ? s : "";
  uint64_t h = str_hash(s);
  int64_t i = cprof__table_find(&b->str_index, h, str_eq, b, s);
  if (i >= 0) {
    *out = (uint32_t)i;
    return 0;
  }
  int err = cprof__grow((void **)&b->strs, &b->cap_strs, b->n_strs + 1, sizeof *b->strs);
  if (err)
    return err;
  if (!(b->strs[b->n_strs] = cprof__arena_strdup(b->a, s)))
    return -ENOMEM;
  if ((err = cprof__table_insert(&b->str_index, h, (uint32_t)b->n_strs)))
    return err;
  *out = (uint32_t)b->n_strs++;
  return 0;
}

/* ---- frames ------------------------------------------------------------ */

/* The name of a frame with no function name: "[" + the mapping file's
 * base name + "]" (Go's filepath.Base: trailing slashes do not count), or
 * "<unknown>". */
static int unknown_name(builder_t *b, const cprof__pf_location_t *l, uint32_t *out) {
  const char *file = l->mapping && l->mapping->file ? l->mapping->file : "";
  if (!*file)
    return intern(b, "<unknown>", out);
  size_t n;
  const char *base = cprof__path_base(file, &n);
  int err = cprof__grow((void **)&b->name_buf, &b->cap_name, n + 3, 1);
  if (err)
    return err;
  b->name_buf[0] = '[';
  memcpy(b->name_buf + 1, base, n);
  memcpy(b->name_buf + 1 + n, "]", 2);
  return intern(b, b->name_buf, out);
}

static int line_frame(builder_t *b, const cprof__pf_location_t *l, const cprof__pf_line_t *ln,
                      frame_t *f) {
  const cprof__pf_function_t *fn = ln ? ln->function : NULL;
  int err;
  if (fn && fn->name && *fn->name)
    err = intern(b, fn->name, &f->name);
  else
    err = unknown_name(b, l, &f->name);
  if (!err)
    err = intern(b, fn ? fn->filename : "", &f->file);
  return err;
}

/* l's frames, outer first, into out[0..*n). */
static int make_frames(builder_t *b, const cprof__pf_location_t *l, frame_t *out) {
  if (l->n_lines == 0)
    return line_frame(b, l, NULL, &out[0]);
  for (size_t k = 0; k < l->n_lines; k++) {
    int err = line_frame(b, l, &l->lines[l->n_lines - 1 - k], &out[k]);
    if (err)
      return err;
  }
  return 0;
}

/* The frames of location l, made on first use when l is one of the
 * profile's (it always is in a decoded profile), and each time otherwise. */
static int location_frames(builder_t *b, const cprof__pf_location_t *l, const frame_t **frames,
                           size_t *n) {
  const cprof__pf_t *p = b->p;
  uintptr_t x = (uintptr_t)l, base = (uintptr_t)p->locations;
  size_t count = l->n_lines ? l->n_lines : 1;
  int err;
  if (!p->locations || x < base || (x - base) % sizeof *l ||
      (x - base) / sizeof *l >= p->n_locations) {
    if ((err = cprof__grow((void **)&b->tmp, &b->cap_tmp, count, sizeof *b->tmp)) ||
        (err = make_frames(b, l, b->tmp)))
      return err;
    *frames = b->tmp;
    *n = count;
    return 0;
  }
  size_t i = (x - base) / sizeof *l;
  if (b->loc_first[i] == NONE) {
    if (b->n_frames + count >= NONE)
      return -EOVERFLOW;
    if ((err = cprof__grow((void **)&b->frames, &b->cap_frames, b->n_frames + count,
                           sizeof *b->frames)) ||
        (err = make_frames(b, l, b->frames + b->n_frames)))
      return err;
    b->loc_first[i] = (uint32_t)b->n_frames;
    b->loc_n[i] = (uint32_t)count;
    b->n_frames += count;
  }
  *frames = b->frames + b->loc_first[i];
  *n = b->loc_n[i];
  return 0;
}

/* ---- nodes ------------------------------------------------------------- */

static uint64_t child_hash(uint32_t parent, frame_t f) {
  uint64_t h = cprof__hash_u64(CPROF_HASH_SEED, parent);
  h = cprof__hash_u64(h, f.name);
  return cprof__hash_u64(h, f.file);
}

typedef struct child_key {
  uint32_t parent;
  frame_t f;
} child_key_t;

static int child_eq(const void *ctx, uint32_t value, const void *key) {
  const node_info_t *n = &((const builder_t *)ctx)->info[value];
  const child_key_t *k = key;
  return n->parent == k->parent && n->name == k->f.name && n->file == k->f.file;
}

static int new_node(builder_t *b, uint32_t parent, frame_t f, uint32_t *out) {
  size_t nv = b->t->n_values ? b->t->n_values : 1;
  if (b->n_nodes >= NONE - 1)
    return -EOVERFLOW;
  if (b->n_nodes == b->cap_nodes) {
    /* nodes and info grow together; cap_nodes is both's. */
    size_t cap = b->cap_nodes ? 2 * b->cap_nodes : 64;
    cprof__pf_tree_node_t **nodes = realloc(b->nodes, cap * sizeof *nodes);
    if (!nodes)
      return -ENOMEM;
    b->nodes = nodes;
    node_info_t *info = realloc(b->info, cap * sizeof *info);
    if (!info)
      return -ENOMEM;
    b->info = info;
    b->cap_nodes = cap;
  }
  cprof__pf_tree_node_t *n = cprof__arena_alloc(b->a, sizeof *n);
  int64_t *values = cprof__arena_array(b->a, 2 * nv, sizeof *values);
  if (!n || !values)
    return -ENOMEM;
  n->total = values;
  n->self = values + nv;
  n->name = b->strs[f.name];
  n->file = b->strs[f.file];
  uint32_t id = (uint32_t)b->n_nodes++;
  b->nodes[id] = n;
  b->info[id] = (node_info_t){parent, f.name, f.file, NONE, NONE, 0};
  if (parent != NONE) {
    node_info_t *pi = &b->info[parent];
    b->info[id].next_sibling = pi->first_child;
    pi->first_child = id;
    pi->n_children++;
  }
  *out = id;
  return 0;
}

static int child(builder_t *b, uint32_t parent, frame_t f, uint32_t *out) {
  child_key_t k = {parent, f};
  uint64_t h = child_hash(parent, f);
  int64_t i = cprof__table_find(&b->children, h, child_eq, b, &k);
  if (i >= 0) {
    *out = (uint32_t)i;
    return 0;
  }
  int err = new_node(b, parent, f, out);
  if (!err)
    err = cprof__table_insert(&b->children, h, *out);
  return err;
}

/* Adds v[0..n) to dst, wrapping instead of overflowing. */
static void add(int64_t *dst, const int64_t *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    dst[i] = (int64_t)((uint64_t)dst[i] + (uint64_t)v[i]);
}

/* Adds p's samples, their values at total[offset..] and self[offset..]. */
static int add_profile(builder_t *b, const cprof__pf_t *p, size_t offset) {
  size_t nt = p->n_sample_types;
  b->p = p;
  free(b->loc_first);
  free(b->loc_n);
  b->loc_first = malloc((p->n_locations + 1) * sizeof *b->loc_first);
  b->loc_n = malloc((p->n_locations + 1) * sizeof *b->loc_n);
  if (!b->loc_first || !b->loc_n)
    return -ENOMEM;
  memset(b->loc_first, 0xff, (p->n_locations + 1) * sizeof *b->loc_first);
  b->n_frames = 0;
  for (size_t s = 0; s < p->n_samples; s++) {
    const cprof__pf_sample_t *sample = &p->samples[s];
    int zero = 1;
    for (size_t i = 0; i < nt && zero; i++)
      zero = sample->values[i] == 0;
    if (zero)
      continue;
    uint32_t at = 0; /* the root */
    add(b->nodes[0]->total + offset, sample->values, nt);
    for (size_t k = sample->n_locations; k-- > 0;) {
      const frame_t *frames;
      size_t n;
      int err = location_frames(b, sample->locations[k], &frames, &n);
      for (size_t j = 0; !err && j < n; j++) {
        /* frames stays valid through the walk: child() makes nodes, not
         * frames. */
        if (!(err = child(b, at, frames[j], &at)))
          add(b->nodes[at]->total + offset, sample->values, nt);
      }
      if (err)
        return err;
    }
    add(b->nodes[at]->self + offset, sample->values, nt);
  }
  return 0;
}

/* ---- sorting and finishing --------------------------------------------- */

typedef struct sort_ctx {
  size_t by[2]; /* value indexes, heaviest first by by[0], then by[1] */
  size_t n_by;
} sort_ctx_t;

static int heavier_first(const void *x, const void *y, void *ctx) {
  const cprof__pf_tree_node_t *a = *(cprof__pf_tree_node_t *const *)x;
  const cprof__pf_tree_node_t *b = *(cprof__pf_tree_node_t *const *)y;
  const sort_ctx_t *c = ctx;
  for (size_t i = 0; i < c->n_by; i++)
    if (a->total[c->by[i]] != b->total[c->by[i]])
      return a->total[c->by[i]] > b->total[c->by[i]] ? -1 : 1;
  int r = strcmp(a->name, b->name);
  return r ? r : strcmp(a->file, b->file);
}

size_t cprof__pf_default_index(const cprof__pf_t *p) {
  if (p->default_sample_type && *p->default_sample_type)
    for (size_t i = 0; i < p->n_sample_types; i++)
      if (p->sample_types[i].type && !strcmp(p->sample_types[i].type, p->default_sample_type))
        return i;
  return p->n_sample_types ? p->n_sample_types - 1 : 0;
}

static int finish(builder_t *b, const sort_ctx_t *sc) {
  for (size_t i = 0; i < b->n_nodes; i++) {
    cprof__pf_tree_node_t *n = b->nodes[i];
    const node_info_t *ni = &b->info[i];
    if (!ni->n_children)
      continue;
    n->children = cprof__arena_array(b->a, ni->n_children, sizeof *n->children);
    if (!n->children)
      return -ENOMEM;
    for (uint32_t c = ni->first_child; c != NONE; c = b->info[c].next_sibling)
      n->children[n->n_children++] = b->nodes[c];
    if (b->t->n_values)
      qsort_r(n->children, n->n_children, sizeof *n->children, heavier_first, (void *)sc);
  }
  b->t->n_nodes = b->n_nodes;
  return 0;
}

static void builder_free(builder_t *b) {
  free(b->strs);
  cprof__table_free(&b->str_index);
  free(b->nodes);
  free(b->info);
  cprof__table_free(&b->children);
  free(b->loc_first);
  free(b->loc_n);
  free(b->frames);
  free(b->tmp);
  free(b->name_buf);
}

/* Builds the tree of ps[0..n), the values of ps[i] at i * n_types. */
static int build(const cprof__pf_t *const *ps, size_t n, const sort_ctx_t *sc,
                 cprof__pf_tree_t **out) {
  builder_t b = {0};
  int err = -ENOMEM;
  *out = NULL;
  cprof__table_init(&b.str_index);
  cprof__table_init(&b.children);
  cprof__arena_t *a = cprof__arena_new(0);
  cprof__pf_tree_t *t = a ? cprof__arena_alloc(a, sizeof *t) : NULL;
  if (!t)
    goto fail;
  t->arena = b.a = a;
  t->n_values = n * ps[0]->n_sample_types;
  b.t = t;
  uint32_t empty, root;
  if ((err = intern(&b, "", &empty)) || (err = new_node(&b, NONE, (frame_t){empty, empty}, &root)))
    goto fail;
  t->root = b.nodes[root];
  for (size_t i = 0; i < n; i++)
    if ((err = add_profile(&b, ps[i], i * ps[0]->n_sample_types)))
      goto fail;
  if ((err = finish(&b, sc)))
    goto fail;
  builder_free(&b);
  *out = t;
  return 0;
fail:
  builder_free(&b);
  cprof__arena_free(a);
  return err;
}

int cprof__pf_tree(const cprof__pf_t *p, cprof__pf_tree_t **out) {
  sort_ctx_t sc = {{cprof__pf_default_index(p), 0}, 1};
  return build(&p, 1, &sc, out);
}

int cprof__pf_tree_diff(const cprof__pf_t *base, const cprof__pf_t *new_, cprof__pf_tree_t **out) {
  *out = NULL;
  size_t nt = new_->n_sample_types;
  if (base->n_sample_types != nt)
    return -EINVAL;
  for (size_t i = 0; i < nt; i++) {
    const cprof__value_type_t *x = &new_->sample_types[i], *y = &base->sample_types[i];
    if (strcmp(x->type ? x->type : "", y->type ? y->type : "") ||
        strcmp(x->unit ? x->unit : "", y->unit ? y->unit : ""))
      return -EINVAL;
  }
  /* NEW's weight orders the children, BASE's breaks ties, so that what
   * went away entirely still comes in a fixed order. */
  size_t d = cprof__pf_default_index(new_);
  sort_ctx_t sc = {{d, nt + d}, 2};
  const cprof__pf_t *ps[2] = {new_, base};
  return build(ps, 2, &sc, out);
}

void cprof__pf_tree_free(cprof__pf_tree_t *t) {
  if (t)
    cprof__arena_free(t->arena);
}
