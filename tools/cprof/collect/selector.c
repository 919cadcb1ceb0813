/* A Prometheus label selector (collect/selector.h). */
#include "collect/selector.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void collect_selector_free(collect_selector_t *s) {
  if (!s)
    return;
  for (size_t i = 0; i < s->n; i++) {
    if (s->m[i].op == COLLECT_MATCH_RE || s->m[i].op == COLLECT_MATCH_NRE)
      regfree(&s->m[i].re);
    free(s->m[i].name);
    free(s->m[i].value);
  }
  free(s->m);
  free(s);
}

typedef struct {
  const char *text, *p;
  char *err;
  size_t errlen;
} parser_t;

static int fail(parser_t *ps, const char *what) {
  snprintf(ps->err, ps->errlen, "bad selector at column %zu: %s", (size_t)(ps->p - ps->text) + 1,
           what);
  return -EINVAL;
}

static void blanks(parser_t *ps) {
  while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
    ps->p++;
}

/* A quoted string at ps->p into a malloc'd *out. */
static int quoted(parser_t *ps, char **out) {
  char q = *ps->p;
  if (q != '"' && q != '\'' && q != '`')
    return fail(ps, "want a quoted value (\"...\")");
  const char *start = ps->p++;
  size_t cap = strlen(ps->p) + 1, n = 0;
  char *v = malloc(cap);
  if (!v)
    return -ENOMEM;
  for (;;) {
    char c = *ps->p;
    if (!c) {
      free(v);
      ps->p = start;
      return fail(ps, "a value without its closing quote");
    }
    ps->p++;
    if (c == q)
      break;
    if (c == '\\' && q != '`') {
      char e = *ps->p++;
      switch (e) {
      case '\\':
      case '"':
      case '\'':
        c = e;
        break;
      case 'n':
        c = '\n';
        break;
      case 't':
        c = '\t';
        break;
      default:
        free(v);
        ps->p--;
        return fail(ps, "an unknown escape (\\\\, \\\", \\', \\n and \\t are known)");
      }
    }
    v[n++] = c;
  }
  v[n] = '\0';
  *out = v;
  return 0;
}

int collect_selector_parse(const char *text, collect_selector_t **out, char *err, size_t errlen) {
  *out = NULL;
  collect_selector_t *s = calloc(1, sizeof *s);
  if (!s)
    return -ENOMEM;
  parser_t ps = {text, text, err, errlen};
  size_t cap = 0;
  int rc = 0;
  blanks(&ps);
  if (!*ps.p) {
    *out = s;
    return 0;
  }
  if (*ps.p != '{') {
    rc = fail(&ps, "want { to begin, as in {job=\"backend\"}");
    goto out;
  }
  ps.p++;
  for (;;) {
    blanks(&ps);
    if (*ps.p == '}') {
      ps.p++;
      break;
    }
    if (!isalpha((unsigned char)*ps.p) && *ps.p != '_') {
      rc = fail(&ps, *ps.p ? "want a label name" : "want } to end");
      goto out;
    }
    const char *name = ps.p;
    while (isalnum((unsigned char)*ps.p) || *ps.p == '_')
      ps.p++;
    if (cprof__grow((void **)&s->m, &cap, s->n + 1, sizeof *s->m) != 0) {
      rc = -ENOMEM;
      goto out;
    }
    collect_matcher_t *m = &s->m[s->n];
    memset(m, 0, sizeof *m);
    m->op = COLLECT_MATCH_EQ; /* no regex to free until compiled */
    if (!(m->name = strndup(name, (size_t)(ps.p - name)))) {
      rc = -ENOMEM;
      goto out;
    }
    s->n++;
    blanks(&ps);
    collect_match_op_t op;
    if (ps.p[0] == '=' && ps.p[1] == '~')
      op = COLLECT_MATCH_RE, ps.p += 2;
    else if (ps.p[0] == '!' && ps.p[1] == '~')
      op = COLLECT_MATCH_NRE, ps.p += 2;
    else if (ps.p[0] == '!' && ps.p[1] == '=')
      op = COLLECT_MATCH_NE, ps.p += 2;
    else if (ps.p[0] == '=')
      op = COLLECT_MATCH_EQ, ps.p += 1;
    else {
      rc = fail(&ps, "want an operator: =, !=, =~ or !~");
      goto out;
    }
    blanks(&ps);
    if ((rc = quoted(&ps, &m->value)))
      goto out;
    if (op == COLLECT_MATCH_RE || op == COLLECT_MATCH_NRE) {
      /* Anchored as Prometheus anchors it. */
      size_t n = strlen(m->value) + 5;
      char *re = malloc(n);
      if (!re) {
        rc = -ENOMEM;
        goto out;
      }
      snprintf(re, n, "^(%s)$", m->value);
      int r = regcomp(&m->re, re, REG_EXTENDED | REG_NOSUB);
      free(re);
      if (r != 0) {
        char why[160];
        regerror(r, &m->re, why, sizeof why);
        snprintf(err, errlen, "bad selector: the regex of %s, \"%s\": %s", m->name, m->value, why);
        rc = -EINVAL;
        goto out;
      }
    }
    m->op = op;
    blanks(&ps);
    if (*ps.p == ',') {
      ps.p++;
      continue;
    }
    if (*ps.p != '}') {
      rc = fail(&ps, *ps.p ? "want , or }" : "want } to end");
      goto out;
    }
  }
  blanks(&ps);
  if (*ps.p) {
    rc = fail(&ps, "text after the closing }");
    goto out;
  }
out:
  if (rc == -ENOMEM)
    snprintf(err, errlen, "out of memory");
  if (rc) {
    collect_selector_free(s);
    return rc;
  }
  *out = s;
  return 0;
}

void collect_selector_split(collect_selector_t *s, int (*is_series)(void *arg, const char *name),
                            void *arg) {
  s->nseries = s->nsamples = 0;
  for (size_t i = 0; i < s->n; i++) {
    s->m[i].series = is_series(arg, s->m[i].name) != 0;
    if (s->m[i].series)
      s->nseries++;
    else
      s->nsamples++;
  }
}

int collect_matcher_match(const collect_matcher_t *m, const char *v) {
  switch (m->op) {
  case COLLECT_MATCH_EQ:
    return strcmp(v, m->value) == 0;
  case COLLECT_MATCH_NE:
    return strcmp(v, m->value) != 0;
  case COLLECT_MATCH_RE:
    return regexec(&m->re, v, 0, NULL, 0) == 0;
  default:
    return regexec(&m->re, v, 0, NULL, 0) != 0;
  }
}

void collect_labels_get(const char *labels, const char *name, char *out, size_t outlen) {
  size_t nl = strlen(name), n = 0;
  out[0] = '\0';
  const char *p = labels && *labels == '{' ? labels + 1 : NULL;
  while (p && *p && *p != '}') {
    const char *eq = strchr(p, '=');
    if (!eq || eq[1] != '"')
      return;
    int want = (size_t)(eq - p) == nl && strncmp(p, name, nl) == 0;
    p = eq + 2;
    for (; *p && *p != '"'; p++) {
      char c = *p;
      if (c == '\\' && p[1]) {
        p++;
        c = *p == 'n' ? '\n' : *p;
      }
      if (want && n + 1 < outlen)
        out[n++] = c;
    }
    if (want) {
      out[n] = '\0';
      return;
    }
    if (*p == '"')
      p++;
    if (*p == ',')
      p++;
  }
}

int collect_selector_match_series(const collect_selector_t *s, const char *labels) {
  if (!s)
    return 1;
  char v[512];
  for (size_t i = 0; i < s->n; i++) {
    if (!s->m[i].series)
      continue;
    collect_labels_get(labels, s->m[i].name, v, sizeof v);
    if (!collect_matcher_match(&s->m[i], v))
      return 0;
  }
  return 1;
}

/* A sample's value of label key: its first string, or its number in
 * decimal; "" without one. */
static const char *sample_label(const cprof__pf_sample_t *smp, const char *key, char *num,
                                size_t numlen) {
  for (size_t i = 0; i < smp->n_labels; i++)
    if (strcmp(smp->labels[i].key, key) == 0) {
      if (smp->labels[i].str)
        return smp->labels[i].str;
      snprintf(num, numlen, "%" PRId64, smp->labels[i].num);
      return num;
    }
  return "";
}

size_t collect_selector_filter(const collect_selector_t *s, cprof__pf_t *p) {
  if (!s || !s->nsamples)
    return p->n_samples;
  size_t kept = 0;
  char num[32];
  for (size_t i = 0; i < p->n_samples; i++) {
    int ok = 1;
    for (size_t k = 0; k < s->n && ok; k++)
      if (!s->m[k].series)
        ok = collect_matcher_match(&s->m[k],
                                   sample_label(&p->samples[i], s->m[k].name, num, sizeof num));
    if (ok)
      p->samples[kept++] = p->samples[i];
  }
  p->n_samples = kept;
  return kept;
}
