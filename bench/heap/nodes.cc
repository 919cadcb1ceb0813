/* nodes: churn's C++ shapes (see churn.c), small objects through
 * operator new and delete as a C++ program makes them: the nodes of a
 * standard container. Linked with churn.c into churn-cxx by g++; churn.c
 * reaches these through weak declarations.
 *
 *   map   std::map<uint64_t, uint64_t> of N random keys; a step erases a
 *         random one of them and inserts a new random key (a red-black
 *         tree node of 48 bytes deleted, one new'ed, and the tree's
 *         walks and rebalancing around them, as a real map's users pay)
 *   list  std::list<uint64_t> of N nodes used as a queue; a step pops the
 *         front and pushes a new node at the back (24 bytes): the
 *         allocator's work with as little else as a container allows
 *
 * The keys of the map live in mmap()ed memory (heap.h), so every new and
 * delete in the timed steps is a node's. */
#include "heap.h"

#include <cstdint>
#include <list>
#include <map>
#include <new>

namespace {

typedef std::map<uint64_t, uint64_t> map_t;
typedef std::list<uint64_t> list_t;

struct nodes {
  int kind; /* 0 map, 1 list */
  long n;
  uint64_t *key; /* map: the key in each slot */
  map_t map;
  list_t list;
};

/* The steps, each container's own; noipa keeps their names in a profile. */
__attribute__((noipa)) void map_steps(nodes *s, long ops, rng_t *r, uint64_t *bytes, uint64_t *sum) {
  uint64_t b = 0, x = 0;
  for (long k = 0; k < ops; k++) {
    size_t i = rng_below(r, (uint64_t)s->n);
    s->map.erase(s->key[i]);
    /* try_emplace allocates nothing for a key already there (a 64-bit
     * collision: never, in practice). */
    auto in = s->map.try_emplace(s->key[i] = rng_next(r), (uint64_t)k);
    b += in.second ? sizeof(std::_Rb_tree_node<map_t::value_type>) : 0;
    x += (uintptr_t)&*in.first >> 4;
  }
  *bytes = b, *sum = x;
}

__attribute__((noipa)) void list_steps(nodes *s, long ops, uint64_t *bytes, uint64_t *sum) {
  uint64_t x = 0;
  for (long k = 0; k < ops; k++) {
    s->list.pop_front();
    s->list.push_back((uint64_t)k);
    x += (uintptr_t)&s->list.back() >> 4;
  }
  *bytes = (uint64_t)ops * sizeof(std::_List_node<uint64_t>), *sum = x;
}

} // namespace

/* The bytes of one node: what a step new's. libstdc++'s node types, since
 * the program asks for exactly their size. */
extern "C" size_t nodes_size(int kind) {
  return kind ? sizeof(std::_List_node<uint64_t>) : sizeof(std::_Rb_tree_node<map_t::value_type>);
}

/* A container of n nodes (before the timing). The state itself is
 * mmap()ed too; only the nodes come from operator new. */
extern "C" void *nodes_fill(int kind, long n, uint64_t seed) {
  nodes *s = new (bench_map(sizeof(nodes))) nodes();
  s->kind = kind;
  s->n = n;
  rng_t r;
  rng_seed(&r, seed);
  if (kind) {
    for (long i = 0; i < n; i++)
      s->list.push_back(rng_next(&r));
    return s;
  }
  s->key = static_cast<uint64_t *>(bench_map((size_t)n * sizeof *s->key));
  for (long i = 0; i < n; i++)
    s->map.try_emplace(s->key[i] = rng_next(&r), 0);
  return s;
}

extern "C" void nodes_steps(void *state, long ops, uint64_t seed, uint64_t *bytes, uint64_t *sum) {
  nodes *s = static_cast<nodes *>(state);
  rng_t r;
  rng_seed(&r, seed);
  if (s->kind)
    list_steps(s, ops, bytes, sum);
  else
    map_steps(s, ops, &r, bytes, sum);
}
