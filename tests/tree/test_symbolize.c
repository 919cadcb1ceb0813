/* A tree's owner names its members' addresses (src/tree/symbolize.c): a
 * forked child that is a member (cprof__symbolizer_frugal) writes
 * profile.proto and its goroutine dump's frames with addresses only, no
 * name in them; the parent, the owner, names them from its own mappings of
 * the same file, with files and lines. What it cannot place stays an
 * address. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "core/buf.h"
#include "model/model.h"
#include "profile/builder.h"
#include "symbol/symbolize.h"
#include "tree/tree.h"

__attribute__((noinline)) int tree_test_marker(int x) {
  __asm__ volatile("" ::: "memory");
  return x * 3 + 1;
}

/* Where the marker is: a pc inside it, its first instruction's. */
static uintptr_t marker_pc(void) { return (uintptr_t)&tree_test_marker + 1; }

/* What a member writes: profile.proto of one sample at the marker, then
 * the marker's stack as the goroutine dump writes it. */
static void member_writes(int fd) {
  cprof__symbolizer_frugal(1);
  cprof__profile_desc_t desc = {.sample_types = {{"samples", "count"}}, .n_sample_types = 1};
  cprof__builder_t *b = cprof__builder_new(&desc);
  uintptr_t pcs[1] = {marker_pc()};
  int64_t one = 1;
  cprof__buf_t proto, text;
  cprof__buf_init(&proto);
  cprof__buf_init(&text);
  if (!b || cprof__builder_add(b, pcs, 1, &one, NULL, 0) != 0 ||
      cprof__builder_write_proto(b, &proto) != 0)
    _exit(2);
  cprof__buf_puts(&text, "thread 1 \"member\" [sleeping]:\n");
  cprof__format_stack(&text, pcs, 1);
  uint64_t n[2] = {proto.len, text.len};
  if (write(fd, n, sizeof n) != sizeof n ||
      write(fd, proto.data, proto.len) != (ssize_t)proto.len ||
      write(fd, text.data, text.len) != (ssize_t)text.len)
    _exit(3);
  _exit(0);
}

static int read_all(int fd, void *to, size_t n) {
  for (size_t got = 0; got < n;) {
    ssize_t r = read(fd, (char *)to + got, n - got);
    if (r <= 0)
      return -1;
    got += (size_t)r;
  }
  return 0;
}

/* The location at the marker, or NULL. */
static const cprof__pf_location_t *at_marker(const cprof__pf_t *p) {
  for (size_t i = 0; i < p->n_locations; i++)
    if (p->locations[i].address == marker_pc())
      return &p->locations[i];
  return NULL;
}

int main(void) {
  int pipefd[2];
  if (pipe(pipefd) != 0)
    return 1;
  pid_t child = fork();
  if (child == 0) {
    close(pipefd[0]);
    member_writes(pipefd[1]);
  }
  close(pipefd[1]);
  uint64_t n[2] = {0, 0};
  char *proto = NULL, *text = NULL;
  int ok = read_all(pipefd[0], n, sizeof n) == 0 && n[0] < (1u << 24) && n[1] < (1u << 24) &&
           (proto = malloc(n[0] + 1)) && (text = malloc(n[1] + 1)) &&
           read_all(pipefd[0], proto, n[0]) == 0 && read_all(pipefd[0], text, n[1]) == 0;
  int status = 0;
  waitpid(child, &status, 0);
  CHECK(ok);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  if (!ok)
    return check_result("tree/symbolize");
  text[n[1]] = '\0';

  /* The member's profile: the marker's address, under the test's mapping,
   * with no name. */
  cprof__pf_t *p = NULL;
  char why[200];
  CHECK_EQ_INT(cprof__pf_decode(proto, n[0], &p, why, sizeof why), 0);
  const cprof__pf_location_t *l = p ? at_marker(p) : NULL;
  CHECK(l != NULL);
  if (l) {
    CHECK_EQ_INT((int)l->n_lines, 0);
    CHECK(l->mapping != NULL && strstr(l->mapping->file, "tree_test_symbolize") != NULL);
    CHECK(l->mapping && !l->mapping->has_functions);
  }
  /* The owner names it, with the file and line of its definition. */
  CHECK_EQ_INT(p ? cprof__tree_symbolize(p) : -1, 0);
  if (l) {
    CHECK_EQ_INT((int)l->n_lines, 1);
    if (l->n_lines == 1) {
      CHECK_EQ_STR(l->lines[0].function->name, "tree_test_marker");
      CHECK(strstr(l->lines[0].function->filename, "test_symbolize.c") != NULL);
      CHECK(l->lines[0].line > 0);
    }
    CHECK(l->mapping && l->mapping->has_functions && l->mapping->has_line_numbers);
    CHECK(l->mapping && l->mapping->build_id[0] != '\0');
  }
  cprof__pf_free(p);

  /* A location under a file the owner does not map stays an address. */
  p = NULL;
  CHECK_EQ_INT(cprof__pf_decode(proto, n[0], &p, why, sizeof why), 0);
  l = p ? at_marker(p) : NULL;
  if (l) {
    ((cprof__pf_mapping_t *)l->mapping)->file = "/nonexistent/member-only.so";
    CHECK_EQ_INT(cprof__tree_symbolize(p), 0);
    CHECK_EQ_INT((int)l->n_lines, 0);
    CHECK(!l->mapping->has_functions);
  }
  cprof__pf_free(p);

  /* The member's dump: the frame as an address in the file; the owner's:
   * named as the member would have named it. */
  CHECK(strstr(text, "tree_test_marker") == NULL);
  CHECK(strstr(text, "\n0x") != NULL && strstr(text, "tree_test_symbolize+0x") != NULL);
  cprof__buf_t named;
  cprof__buf_init(&named);
  CHECK_EQ_INT(cprof__tree_name_dump(text, n[1], &named), 0);
  cprof__buf_putc(&named, '\0');
  CHECK(named.data &&
        strstr(named.data, "thread 1 \"member\" [sleeping]:\ntree_test_marker()\n\t") != NULL);
  CHECK(named.data && strstr(named.data, "test_symbolize.c:") != NULL);
  CHECK(named.data && strstr(named.data, " +0x1\n") != NULL);
  if (check_failures)
    fprintf(stderr, "member's dump:\n%s\nnamed:\n%s\n", text, named.data ? named.data : "");
  cprof__buf_free(&named);
  free(proto);
  free(text);
  return check_result("tree/symbolize");
}
