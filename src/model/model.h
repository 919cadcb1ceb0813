/* A profile.proto in memory, for reading: what the cprof command, the
 * viewer and the collector work on. The writing side is profile/builder.h.
 *
 * The model is profile.proto's own (github.com/google/pprof/proto/profile.proto)
 * with its IDs resolved: a sample points at its locations, a location at
 * its mapping and its lines' functions, and every string is a C string
 * (the string table's bytes, NUL-terminated; a string holding a NUL byte
 * reads as ending there). Everything a profile holds lives in its arena and
 * goes with cprof__pf_free.
 *
 * The operations follow pprof's (github.com/google/pprof/profile and
 * internal/graph), so that what `cprof top` prints equals what
 * `go tool pprof -top` prints for the same profile:
 *   decode.c   profile.proto (gzip or not) -> model, bounded, one-line errors
 *              (the wire format in decode_wire.c, the messages in
 *              decode_message.c)
 *   encode.c   model -> profile.proto, and a label set on every sample
 *   merge.c    merge profiles of one type; diff (NEW minus BASE) (each
 *              object mapped in merge_map.c)
 *   filter.c   focus, ignore, hide, show, tagfocus, tagignore
 *   tagroot.c  labels as frames: tagroot, tagleaf
 *   graph.c    nodes (flat/cum by function, file, line or address) and edges
 *              (names in graph_names.c, orders in graph_order.c, trimming
 *              in graph_trim.c)
 *   tree.c     the call tree, root first, for flame graphs and folded stacks
 * and, with headers of their own, units as pprof prints them (measure.h)
 * and names as pprof's symbolizer leaves them (demangle.h).
 *
 * src/model/ builds as a static library of its own, cprof_model: the cprof
 * command and the collector link it whole, and libcprof takes from it only
 * the objects the viewer's pages call (decode, the call tree, labels as
 * frames and the units they need), as a link takes from an archive only
 * what it refers to. The model stands on the encoder's shared pieces in
 * src/profile/ (arena, hash table, wire format, gzip) and never the other
 * way round.
 *
 * Functions return 0 or a negative errno; where a person will see the
 * reason they take err[errlen] and write one line into it, without a
 * trailing newline. */
#ifndef CPROF_MODEL_MODEL_H
#define CPROF_MODEL_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "profile/arena.h"
#include "profile/builder.h" /* cprof__value_type_t, cprof__label_t */

typedef struct cprof__pf_mapping {
  uint64_t id;
  uint64_t start, limit, offset;
  const char *file;     /* "" when none */
  const char *build_id; /* "" when none */
  unsigned has_functions : 1, has_filenames : 1, has_line_numbers : 1, has_inline_frames : 1;
} cprof__pf_mapping_t;

typedef struct cprof__pf_function {
  uint64_t id;
  const char *name;        /* "" when none */
  const char *system_name; /* "" when none */
  const char *filename;    /* "" when none */
  int64_t start_line;
} cprof__pf_function_t;

typedef struct cprof__pf_line {
  const cprof__pf_function_t *function; /* NULL when function_id is 0 */
  int64_t line;
  int64_t column;
} cprof__pf_line_t;

typedef struct cprof__pf_location {
  uint64_t id;
  const cprof__pf_mapping_t *mapping; /* NULL when mapping_id is 0 */
  uint64_t address;
  /* profile.proto's order: lines[n_lines - 1] is the function the
   * address is in, lines[0] the innermost function inlined into it. */
  const cprof__pf_line_t *lines;
  size_t n_lines;
  int is_folded;
} cprof__pf_location_t;

typedef struct cprof__pf_sample {
  /* locations[0] is the leaf, the frame running when sampled. */
  const cprof__pf_location_t **locations;
  size_t n_locations;
  int64_t *values; /* one per sample type */
  /* key and str or num (str NULL for a numeric label), num_unit or NULL */
  const cprof__label_t *labels;
  size_t n_labels;
} cprof__pf_sample_t;

typedef struct cprof__pf {
  cprof__value_type_t *sample_types;
  size_t n_sample_types;
  cprof__pf_sample_t *samples;
  size_t n_samples;
  /* Sorted by id, which is unique (decode checks it). */
  cprof__pf_mapping_t *mappings;
  size_t n_mappings;
  cprof__pf_location_t *locations;
  size_t n_locations;
  cprof__pf_function_t *functions;
  size_t n_functions;
  const char *drop_frames; /* "" when none */
  const char *keep_frames; /* "" when none */
  int64_t time_nanos;
  int64_t duration_nanos;
  cprof__value_type_t period_type; /* "" and "" when none */
  int64_t period;
  const char **comments;
  size_t n_comments;
  const char *default_sample_type; /* "" when none */
  /* decode: the mappings', locations' and functions' IDs ran 1..n in the
   * file's order, as Parca requires (pprof does not). */
  int ids_sequential;
  cprof__arena_t *arena; /* owns all of the above */
} cprof__pf_t;

void cprof__pf_free(cprof__pf_t *p);

/* pprof's default sample type (SampleIndexByName("")): the index of the
 * one default_sample_type names, else the last; 0 with none. (tree.c) */
size_t cprof__pf_default_index(const cprof__pf_t *p);

/* ---- decode.c ---------------------------------------------------------- */

/* Decodes profile.proto from data[0..n), gzip-compressed (RFC 1952, as
 * pprof writes it) or not. Whatever the bytes, returns in time linear in
 * their size (and their inflated size), with memory bounded by a multiple
 * of it, and never crashes: 0 with *out, or -EINVAL with a line in err
 * naming what is wrong and where ("sample 3: location id 17 is not in the
 * profile", "truncated: field 4 of Location at byte 1234 wants 90 bytes,
 * 12 are left"), or -ENOMEM. As pprof's profile.Parse, it also checks that
 * every ID is nonzero and unique and every reference resolves, and that a
 * sample has as many values as there are sample types. */
int cprof__pf_decode(const void *data, size_t n, cprof__pf_t **out, char *err, size_t errlen);

/* The decoded size cprof__pf_decode allows, inflated: more is an error. */
#define CPROF_PF_MAX_INFLATED ((size_t)4 << 30)

/* ---- encode.c ---------------------------------------------------------- */

/* Appends p as profile.proto to out, gzip-compressed (RFC 1952, as pprof
 * writes it) when gzip is not 0: every field the model holds, with its
 * IDs as they are (unique, every reference resolving, as decode and merge
 * leave them) and each string once in the table, string 0 being "". A
 * decode of the bytes gives p back, but for what the format cannot say: a
 * label whose string is "" (it reads as no label) and strings past a NUL.
 * 0, or -ENOMEM (-EOVERFLOW for 2^32 strings) with a line in err. */
int cprof__pf_encode(const cprof__pf_t *p, int gzip, cprof__buf_t *out, char *err, size_t errlen);

/* Gives every sample the string label key=str, in place of any label of
 * that key it has (string or number, one or several), other labels kept in
 * their order: how a process tree's owner marks each worker's samples with
 * its pid before merging them. The labels and strings are allocated in
 * p->arena (whose budget, for a decoded profile, may refuse them); on
 * failure p is unchanged. 0, -EINVAL for a NULL argument, or -ENOMEM. */
int cprof__pf_set_label(cprof__pf_t *p, const char *key, const char *str);
/* The same with a numeric label, key=num (unit NULL for none): what
 * pprof's -tagfocus=key=N matches as a number (a process's pid). */
int cprof__pf_set_num_label(cprof__pf_t *p, const char *key, int64_t num, const char *unit);

/* ---- merge.c ----------------------------------------------------------- */

/* Merges n profiles whose sample types are the same (types and units, in
 * the same order) and whose period types are the same (-EINVAL with a
 * reason otherwise) into a new one with an arena of its own: samples with
 * the same stack (the same locations: same mapping file, address and
 * lines) and the same labels are one, their values summed, as pprof's
 * profile.Merge; samples summing to zero are dropped, and mappings,
 * locations and functions no sample uses. The first profile's period type
 * and drop/keep frames are kept, and as pprof's combineHeaders, time_nanos
 * is the earliest, duration_nanos the sum, period the largest, comments
 * every distinct one in order, default_sample_type the first given. IDs
 * run 1..N. */
int cprof__pf_merge(cprof__pf_t *const *ps, size_t n, cprof__pf_t **out, char *err, size_t errlen);
/* The check cprof__pf_merge makes of each profile against the first: 0
 * when b can be merged with a, else -EINVAL with a line in err naming them
 * a_name and b_name ("pid 812's sample types (...) differ from pid 811's
 * (...)"); cprof__pf_merge names them by their place ("profile 3"). */
int cprof__pf_compatible(const cprof__pf_t *a, const cprof__pf_t *b, const char *a_name,
                         const char *b_name, char *err, size_t errlen);

/* NEW minus BASE as one profile, as pprof's -diff_base makes it: BASE's
 * samples negated, labelled "pprof::base"="true" (replacing any such
 * label they had), and merged after NEW's (NEW first: its header wins);
 * other labels kept. A stack in both is two samples, NEW's and BASE's
 * negated one, which a graph nets (a node's values sum them); the
 * pprof::base samples give the total percentages are of
 * (cprof__pf_total). */
int cprof__pf_diff(const cprof__pf_t *base, const cprof__pf_t *new_, cprof__pf_t **out, char *err,
                   size_t errlen);

/* ---- filter.c ---------------------------------------------------------- */

/* pprof's filtering options, each a POSIX extended regular expression
 * (regcomp(3), REG_EXTENDED; close to Go's RE2 for what people type), NULL
 * or "" for none. A location matches when any of its lines' function name
 * or file name matches, or its mapping's file does (pprof's
 * profile.FilterSamplesByName). */
typedef struct cprof__pf_filter {
  const char *focus;  /* keep samples with a matching frame */
  const char *ignore; /* drop samples with a matching frame */
  const char *hide;   /* remove matching frames from stacks */
  const char *show;   /* keep only matching frames */
  /* Labels: "key=value" matches that key's value, a bare regex any
   * string label's value, as pprof's -tagfocus; numeric labels with
   * pprof's ranges ("key=1kb:", "key=:100ms"). */
  const char *tagfocus;
  const char *tagignore;
} cprof__pf_filter_t;

/* Where each option's verdict goes in cprof__pf_filter's matched[]. */
enum {
  CPROF_PF_FILTER_FOCUS,
  CPROF_PF_FILTER_IGNORE,
  CPROF_PF_FILTER_HIDE,
  CPROF_PF_FILTER_SHOW,
  CPROF_PF_FILTER_TAGFOCUS,
  CPROF_PF_FILTER_TAGIGNORE,
  CPROF_PF_FILTER_N,
};

/* Filters p in place, as pprof's driver does (applyFocus): the name
 * options first, then the tag options. Stacks are shortened and samples
 * dropped; locations' lines are rewritten in place (hide, show), so they
 * must be p's own, as decode and merge make them. As pprof, a sample with
 * no locations is dropped even when no option is given. -EINVAL with a
 * line in err for a bad regex or number, -ENOMEM. matched, if not NULL, is
 * an array of CPROF_PF_FILTER_N: matched[CPROF_PF_FILTER_FOCUS] and so on
 * say whether each option is empty or matched something (a location for
 * the name options, a sample for the tag options), for pprof's warning
 * "Focus expression matched no samples". */
int cprof__pf_filter(cprof__pf_t *p, const cprof__pf_filter_t *f, int *matched, char *err,
                     size_t errlen);

/* ---- tagroot.c --------------------------------------------------------- */

/* pprof's -tagroot and -tagleaf: labels as frames. root_keys and leaf_keys
 * are comma-separated label keys (NULL or "" for none); each key adds one
 * frame to every sample, at the root (the first key outermost) or at the
 * leaf (the last key innermost), whose function is named by the sample's
 * values for the key joined by "," ("" when it has none; numeric values
 * scaled to unit as pprof's ScaledLabel, "minimum" by default) and whose
 * file is the key. Do it before filtering, as pprof does, so that the
 * filters see the new frames. *root_matched and *leaf_matched say whether
 * any sample had a value for the keys (pprof's "TagRoot expression
 * matched no samples"). 0, -EINVAL for more than 32 keys, or -ENOMEM. */
int cprof__pf_tagroot(cprof__pf_t *p, const char *root_keys, const char *leaf_keys,
                      const char *unit, int *root_matched, int *leaf_matched);

/* ---- graph.c ----------------------------------------------------------- */

/* What a node is: pprof's -functions (default), -files, -lines,
 * -addresses. */
typedef enum cprof__pf_granularity {
  CPROF_PF_FUNCTIONS,
  CPROF_PF_FILES,
  CPROF_PF_LINES,
  CPROF_PF_ADDRESSES,
} cprof__pf_granularity_t;

typedef struct cprof__pf_node cprof__pf_node_t;

typedef struct cprof__pf_edge {
  cprof__pf_node_t *from, *to; /* caller, callee */
  int64_t weight;              /* value of the samples through this call */
  int64_t weight_div;          /* with mean: their first values; show weight / weight_div */
  int inline_;                 /* every call on it was inlined */
  int residual;                /* stands for a path through dropped nodes */
} cprof__pf_edge_t;

struct cprof__pf_node {
  /* The name pprof's report gives the node (NodeInfo.PrintableName):
   * "main.work", "main.work file.c:12" (-lines),
   * "00000000004012ab main.work file.c:12" (-addresses, %016x), "file.c"
   * (-files); "(inline)" is not part of it. A location with no function
   * is named by its mapping's base name, "[libc.so.6]" (with -addresses
   * after its address), or "<unknown>" when it has none, as pprof does. */
  const char *name;
  const char *function; /* "" when unknown */
  const char *file;     /* "" when unknown */
  int64_t line;         /* with -lines and -addresses */
  int64_t start_line;   /* the function's first line, 0 when unknown (for list) */
  uint64_t address;     /* with -addresses */
  const char *mapping;  /* the mapping's file, "" when none */
  /* pprof's top prints " (inline)" after the name when every edge in is
   * inline (and some is), " (partial-inline)" when only some are: see
   * the edges in `in`. This is 1 in the first case, 2 in the second. */
  int inlined;
  int64_t flat; /* value where this node is the leaf */
  int64_t cum;  /* value of samples with this node anywhere on the stack, once each */
  /* With mean, the sum of those samples' first values: pprof shows
   * flat / flat_div (when not 0); sorting and trimming use flat and cum. */
  int64_t flat_div, cum_div;
  cprof__pf_edge_t **in, **out; /* callers, callees, heaviest first */
  size_t n_in, n_out;
};

/* What a report shows of a node (pprof's FlatValue and CumValue): the
 * value, divided by the samples' counts with mean. */
static inline int64_t cprof__pf_flat(const cprof__pf_node_t *n) {
  return n->flat_div ? n->flat / n->flat_div : n->flat;
}
static inline int64_t cprof__pf_cum(const cprof__pf_node_t *n) {
  return n->cum_div ? n->cum / n->cum_div : n->cum;
}

typedef struct cprof__pf_graph {
  cprof__pf_node_t **nodes; /* by flat, then cum, then name, as pprof's top sorts */
  size_t n_nodes;
  cprof__pf_edge_t **edges;
  size_t n_edges;
  /* report.computeTotal: the sum of the absolute values of all samples
   * (with mean, divided by the sum of their first values; only BASE's
   * samples when the profile has pprof::base labels). */
  int64_t total;
  cprof__arena_t *arena;
} cprof__pf_graph_t;

typedef struct cprof__pf_graph_options {
  size_t sample_index; /* which of the sample types */
  cprof__pf_granularity_t granularity;
  int mean; /* pprof's -mean: value divided by the first (count) value */
} cprof__pf_graph_options_t;

/* The name pprof's reports give line li of location l (li NULL for a
 * location without lines) at granularity g, as a node's name: what
 * `traces` prints for each frame. Allocated in a. NULL when out of memory. */
const char *cprof__pf_frame_name(cprof__arena_t *a, const cprof__pf_location_t *l,
                                 const cprof__pf_line_t *li, cprof__pf_granularity_t g);

/* What a report's percentages are of (pprof's report.computeTotal): the
 * sum of |value| over the samples, over the base's alone in a diff
 * (samples labelled pprof::base=true), divided with o->mean. */
int64_t cprof__pf_total(const cprof__pf_t *p, const cprof__pf_graph_options_t *o);

/* Aggregates p's samples into nodes and edges, as pprof's graph.New with
 * report.newGraph's options: nodes that no sample reached are left out,
 * nodes are in FlatNameOrder (flat down, then name, then cum), edges
 * heaviest first. p must outlive the graph: cprof__pf_graph_trim builds
 * the graph again from p's samples. -EINVAL for a sample_index out of
 * range, -ENOMEM. */
int cprof__pf_graph(const cprof__pf_t *p, const cprof__pf_graph_options_t *o,
                    cprof__pf_graph_t **out);
void cprof__pf_graph_free(cprof__pf_graph_t *g);

/* pprof's trimming options (-nodefraction, -edgefraction, -nodecount).
 * pprof's defaults: 0.005, 0.001 and nodecount 80 for graphs (-dot,
 * -svg, -png), 0 (all) for -top. */
typedef struct cprof__pf_trim {
  double nodefraction; /* drop nodes with cum below this fraction of all flat */
  double edgefraction; /* drop edges below this fraction */
  size_t nodecount;    /* keep at most this many nodes, 0: all */
  /* A graph to draw: nodes are ranked by pprof's EntropyOrder (favouring
   * entry and leaf nodes and those that branch) instead of by flat, and
   * residual edges another path already shows are removed. */
  int visual;
  int cum_sort; /* by cum (pprof's -cum), not flat; for a table */
} cprof__pf_trim_t;

/* What trimming dropped, for the report's header lines ("Dropped 3 nodes
 * (cum <= 0.05s)", "Dropped 1 edge (freq <= 0.01s)", "Showing top 80
 * nodes out of 120"); the values in brackets are the profile's total
 * times the fractions. */
typedef struct cprof__pf_trimmed {
  size_t dropped_nodes; /* under nodefraction */
  size_t dropped_edges; /* under edgefraction, at the end */
  size_t orig_count;    /* nodes left after nodefraction, before nodecount */
} cprof__pf_trimmed_t;

/* report.newTrimmedGraph: drops nodes whose cum is under nodefraction of
 * the sum of all flat values, keeps the first nodecount nodes, drops
 * edges under edgefraction. Each time nodes go the graph is built again
 * from the profile's samples with only the nodes kept, so that a call
 * through dropped nodes becomes a residual edge (pprof's dotted lines).
 * Nodes end sorted as pprof's report sorts them (visual or not). g stays
 * valid (the same pointer) with its contents replaced. */
int cprof__pf_graph_trim(cprof__pf_graph_t *g, const cprof__pf_trim_t *t, cprof__pf_trimmed_t *r);

/* ---- tree.c ------------------------------------------------------------ */

/* The call tree: the root stands for all samples; a node's children are
 * the functions it called (inlined frames are nodes of their own), heaviest
 * first. Values are kept for every sample type, so that a viewer can
 * switch between them: total[i] counts every sample through the node,
 * self[i] those that end in it. */
typedef struct cprof__pf_tree_node {
  /* As pprof's -functions names a node: the function's name; without one,
   * the mapping's base name in brackets, "[libc.so.6]"; without a mapping
   * file, "<unknown>" (pprof drops addresses at -functions). "" for the
   * root. Children are told apart by name and file. */
  const char *name;
  const char *file;      /* "" when unknown */
  int64_t *total, *self; /* n_values each */
  struct cprof__pf_tree_node **children;
  size_t n_children;
} cprof__pf_tree_node_t;

typedef struct cprof__pf_tree {
  cprof__pf_tree_node_t *root;
  size_t n_values; /* = the profile's sample types */
  size_t n_nodes;  /* the root included */
  cprof__arena_t *arena;
} cprof__pf_tree_t;

/* Samples whose values are all zero make no nodes. Children are sorted by
 * total[the default sample type's index] (default_sample_type, or the last
 * type, as pprof), heaviest first, then by name and file. 0, -ENOMEM. */
int cprof__pf_tree(const cprof__pf_t *p, cprof__pf_tree_t **out);
/* NEW and BASE in one tree, for a differential flame graph: n_values is
 * twice the sample types, total[i] NEW's and total[n_types + i] BASE's
 * (the same for self). Children are sorted by NEW's default value, then
 * BASE's, then name. The profiles' sample types must be the same
 * (-EINVAL). */
int cprof__pf_tree_diff(const cprof__pf_t *base, const cprof__pf_t *new_, cprof__pf_tree_t **out);
void cprof__pf_tree_free(cprof__pf_tree_t *t);

#endif
