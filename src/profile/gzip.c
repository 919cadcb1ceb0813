#include "profile/gzip.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>

int cprof__gzip(const void *in, size_t n, cprof__buf_t *out) {
  if (out->failed)
    return -ENOMEM;
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  /* windowBits 15 + 16 asks zlib for a gzip wrapper (RFC 1952) instead of a
   * zlib one (deflateInit2 in zlib.h). Level 1 is what Go uses for profiles
   * (gzip.BestSpeed in runtime/pprof's newProfileBuilder): profiles are
   * compressed while serving, and speed matters more than the last bytes. */
  int rc = deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  if (rc != Z_OK)
    return rc == Z_MEM_ERROR ? -ENOMEM : -EINVAL;

  const unsigned char *p = in;
  size_t left = n;
  int ret = 0;
  for (;;) {
    /* avail_in is a uInt: feed inputs above 4 GiB in pieces. */
    if (zs.avail_in == 0 && left > 0) {
      uInt chunk = left > UINT_MAX ? UINT_MAX : (uInt)left;
      zs.next_in = (Bytef *)(uintptr_t)p; /* zlib's API is not const-clean */
      zs.avail_in = chunk;
      p += chunk;
      left -= chunk;
    }
    int flush = left == 0 ? Z_FINISH : Z_NO_FLUSH;
    size_t room = deflateBound(&zs, zs.avail_in);
    if (room > UINT_MAX)
      room = UINT_MAX;
    if (room < 64)
      room = 64;
    if (cprof__buf_reserve(out, room) != 0) {
      ret = -ENOMEM;
      break;
    }
    zs.next_out = (Bytef *)out->data + out->len;
    zs.avail_out = (uInt)room;
    rc = deflate(&zs, flush);
    out->len += room - zs.avail_out;
    out->data[out->len] = '\0';
    if (rc == Z_STREAM_END)
      break;
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      ret = rc == Z_MEM_ERROR ? -ENOMEM : -EIO;
      break;
    }
  }
  deflateEnd(&zs);
  return ret;
}
