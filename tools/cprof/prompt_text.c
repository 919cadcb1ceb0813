/* The prompt's text helpers (prompt.h): lines trimmed, and what a user
 * typed or a profile holds shown escaped, never obeyed by the terminal. */
#include <string.h>

#include "prompt.h"

char *prompt_trim(char *s) {
  while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
    s++;
  size_t n = strlen(s);
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
    s[--n] = '\0';
  return s;
}

void prompt_put_quoted(FILE *f, const char *s) {
  cprof__buf_t raw, out;
  cprof__buf_init(&raw);
  cprof__buf_init(&out);
  for (const char *c = s; *c; c++) {
    if (*c == '"' || *c == '\\')
      cprof__buf_putc(&raw, '\\');
    cprof__buf_putc(&raw, *c);
  }
  cprof__buf_putc(&raw, '\0');
  if (!raw.failed)
    report_put_name(&out, raw.data);
  fprintf(f, "\"%.*s\"", out.failed ? 0 : (int)out.len, out.failed ? "" : out.data);
  cprof__buf_free(&raw);
  cprof__buf_free(&out);
}

void prompt_put_name(FILE *f, const char *s) {
  cprof__buf_t out;
  cprof__buf_init(&out);
  report_put_name(&out, s);
  if (!out.failed)
    fwrite(out.data, 1, out.len, f);
  cprof__buf_free(&out);
}
