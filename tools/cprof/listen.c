/* HOST:PORT for a command's server (listen.h). */
#include "listen.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int listen_addr(const char *flag, const char *example_port, const char *spec,
                struct sockaddr_storage *ss, socklen_t *len, char *err, size_t errlen) {
  char host[256] = "127.0.0.1";
  const char *port;
  if (spec[0] == '[') {
    const char *end = strchr(spec, ']');
    if (!end || end[1] != ':' || (size_t)(end - spec - 1) >= sizeof host)
      goto bad;
    memcpy(host, spec + 1, (size_t)(end - spec - 1));
    host[end - spec - 1] = '\0';
    port = end + 2;
  } else {
    const char *colon = strrchr(spec, ':');
    if (!colon || (size_t)(colon - spec) >= sizeof host)
      goto bad;
    if (colon > spec) {
      memcpy(host, spec, (size_t)(colon - spec));
      host[colon - spec] = '\0';
    }
    port = colon + 1;
  }
  char *end;
  long p = strtol(port, &end, 10);
  if (!*port || *end || p < 0 || p > 65535)
    goto bad;
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
  int e = getaddrinfo(host, port, &hints, &res);
  if (e != 0) {
    snprintf(err, errlen, "%s %s: %s", flag, spec, gai_strerror(e));
    return -EINVAL;
  }
  memcpy(ss, res->ai_addr, res->ai_addrlen);
  *len = res->ai_addrlen;
  freeaddrinfo(res);
  return 0;
bad:
  snprintf(err, errlen, "%s wants HOST:PORT (127.0.0.1:%s, :%s, [::1]:%s), not %s", flag,
           example_port, example_port, example_port, spec);
  return -EINVAL;
}
