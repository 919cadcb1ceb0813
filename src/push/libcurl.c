/* libcurl, loaded when first needed (libcurl.h). */
#include "push/libcurl.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>

cprof__curl_t cprof__libcurl;
static int state; /* 0 not tried, 1 loaded, -1 failed */
/* Why it failed, said again at each later start: a push started again
 * (cprof_stop, then cprof_start) must be told, not go on without libcurl. */
static char failure[300];

static int failed(char *why, size_t whylen) {
  snprintf(why, whylen, "%s", failure);
  return -ENOENT;
}

int cprof__libcurl_load(char *why, size_t whylen) {
  if (state)
    return state > 0 ? 0 : failed(why, whylen);
  state = -1;
  /* Debian's libcurl3-gnutls (the GnuTLS libcurl the server's TLS already
   * brings the TLS of), else the OpenSSL one: the same ABI. */
  void *h = dlopen("libcurl-gnutls.so.4", RTLD_NOW | RTLD_LOCAL);
  if (!h)
    h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(failure, sizeof failure,
             "cannot load libcurl (libcurl-gnutls.so.4 or libcurl.so.4): %s", dlerror());
    return failed(why, whylen);
  }
  CURLcode (*global_init)(long) = (CURLcode(*)(long))dlsym(h, "curl_global_init");
#define SYM(field, name)                                                                           \
  if (!(*(void **)&cprof__libcurl.field = dlsym(h, name)))                                         \
    goto missing;
  SYM(easy_init, "curl_easy_init")
  SYM(easy_setopt, "curl_easy_setopt")
  SYM(easy_perform, "curl_easy_perform")
  SYM(easy_getinfo, "curl_easy_getinfo")
  SYM(easy_cleanup, "curl_easy_cleanup")
  SYM(easy_reset, "curl_easy_reset")
  SYM(easy_strerror, "curl_easy_strerror")
  SYM(mime_init, "curl_mime_init")
  SYM(mime_addpart, "curl_mime_addpart")
  SYM(mime_name, "curl_mime_name")
  SYM(mime_filename, "curl_mime_filename")
  SYM(mime_type, "curl_mime_type")
  SYM(mime_data, "curl_mime_data")
  SYM(mime_free, "curl_mime_free")
#undef SYM
  /* Optional: without them (before 7.66) an abort waits for libcurl's
   * next progress call. */
#define OPT(field, name) *(void **)&cprof__libcurl.field = dlsym(h, name);
  OPT(multi_init, "curl_multi_init")
  OPT(multi_add_handle, "curl_multi_add_handle")
  OPT(multi_remove_handle, "curl_multi_remove_handle")
  OPT(multi_perform, "curl_multi_perform")
  OPT(multi_poll, "curl_multi_poll")
  OPT(multi_info_read, "curl_multi_info_read")
  OPT(multi_cleanup, "curl_multi_cleanup")
#undef OPT
  if (!cprof__libcurl.multi_init || !cprof__libcurl.multi_add_handle ||
      !cprof__libcurl.multi_remove_handle || !cprof__libcurl.multi_perform ||
      !cprof__libcurl.multi_info_read || !cprof__libcurl.multi_cleanup)
    cprof__libcurl.multi_poll = NULL; /* ingest.c looks at multi_init and multi_poll */
  /* Thread-safe from libcurl 7.84 (CURL_VERSION_THREADSAFE), and counted:
   * a program of its own with libcurl keeps its own init and cleanup. */
  if (!global_init || global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    snprintf(failure, sizeof failure, "libcurl would not initialize");
    return failed(why, whylen); /* the library stays loaded: its constructors have run */
  }
  state = 1;
  return 0;
missing:
  snprintf(failure, sizeof failure,
           "the libcurl found lacks a function cprof needs (7.56 or later)");
  return failed(why, whylen);
}
