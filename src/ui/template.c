/* {{name}} marks filled in (ui/template.h). */
#include "ui/template.h"

#include <errno.h>
#include <string.h>

int cprof__ui_fill(const void *tmpl, size_t n, const cprof__ui_part_t *parts, size_t n_parts,
                   cprof__buf_t *out) {
  const char *h = tmpl, *end = h + n;
  while (h < end) {
    const char *mark = memmem(h, (size_t)(end - h), "{{", 2);
    if (!mark) {
      cprof__buf_append(out, h, (size_t)(end - h));
      break;
    }
    cprof__buf_append(out, h, (size_t)(mark - h));
    size_t left = (size_t)(end - mark), matched = 0;
    for (size_t i = 0; i < n_parts; i++) {
      size_t len = strlen(parts[i].mark);
      if (left >= len && memcmp(mark, parts[i].mark, len) == 0) {
        cprof__buf_append(out, parts[i].bytes, parts[i].len);
        matched = len;
      }
    }
    cprof__buf_append(out, mark, matched ? 0 : 2);
    h = mark + (matched ? matched : 2);
  }
  return out->failed ? -ENOMEM : 0;
}

/* The length of the valid UTF-8 sequence at s (1 to 4), or 0 when the byte
 * at s does not start one. Unicode 15, table 3-7 ("well-formed UTF-8 byte
 * sequences"): the second byte's range depends on the first, which rules
 * out overlong forms, surrogates (ED A0..BF) and code points past
 * U+10FFFF. A NUL ends s, so it never passes for a continuation byte. */
size_t cprof__utf8_len(const unsigned char *s) {
  unsigned c = s[0];
  if (c < 0x80)
    return 1;
  unsigned lo = 0x80, hi = 0xbf;
  size_t n;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0)
      lo = 0xa0;
    else if (c == 0xed)
      hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0)
      lo = 0x90;
    else if (c == 0xf4)
      hi = 0x8f;
  } else {
    return 0;
  }
  if (s[1] < lo || s[1] > hi)
    return 0;
  for (size_t i = 2; i < n; i++)
    if (s[i] < 0x80 || s[i] > 0xbf)
      return 0;
  return n;
}

void cprof__ui_html_text(cprof__buf_t *out, const char *str) {
  const unsigned char *s = (const unsigned char *)str;
  while (*s) {
    unsigned c = *s;
    size_t n = cprof__utf8_len(s);
    if (c == '<') {
      cprof__buf_puts(out, "&lt;");
    } else if (c == '>') {
      cprof__buf_puts(out, "&gt;");
    } else if (c == '&') {
      cprof__buf_puts(out, "&amp;");
    } else if (c == '"') {
      cprof__buf_puts(out, "&#34;");
    } else if (c == '\'') {
      cprof__buf_puts(out, "&#39;");
    } else if (c < 0x20 || c == 0x7f) {
      cprof__buf_printf(out, "\\x%02x", c);
    } else if (n == 0) {
      cprof__buf_puts(out, "\xef\xbf\xbd");
    } else {
      cprof__buf_append(out, s, n);
      s += n;
      continue;
    }
    s++;
  }
}
