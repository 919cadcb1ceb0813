/* The embedded server's lifecycle over a real socket: nothing runs before
 * cprof_start (a linked program decides), start serves, stop stops and
 * frees the port, and start works again afterwards. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "cprof.h"

/* Sends a GET and returns the status code, or -1 if nothing answered. */
static int get_status(const char *addr, const char *path) {
  char host[64];
  snprintf(host, sizeof host, "%s", addr);
  char *colon = strrchr(host, ':');
  if (!colon)
    return -1;
  *colon = '\0';
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
  inet_pton(AF_INET, host, &sa.sin_addr);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    close(fd);
    return -1;
  }
  char req[256];
  int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: x\r\n\r\n", path);
  if (write(fd, req, (size_t)n) != n) {
    close(fd);
    return -1;
  }
  char resp[64] = "";
  ssize_t got = read(fd, resp, sizeof resp - 1);
  close(fd);
  int status = -1;
  if (got > 12)
    sscanf(resp, "HTTP/1.%*d %d", &status);
  return status;
}

int main(void) {
  unsetenv("LD_PRELOAD");
  CHECK(cprof_addr() == NULL); /* linked, not preloaded: nothing until cprof_start */

  cprof_options_t o = {.addr = "127.0.0.1:0"};
  CHECK_EQ_INT(cprof_start(&o), 0);
  const char *a = cprof_addr();
  CHECK(a != NULL);
  char addr[64];
  snprintf(addr, sizeof addr, "%s", a ? a : "");
  CHECK_EQ_INT(get_status(addr, "/debug/pprof/cmdline"), 200);
  CHECK_EQ_INT(get_status(addr, "/debug/pprof/nosuch"), 404);
  CHECK_EQ_INT(get_status(addr, "/debug/pprof/goroutine?debug=2"), 200);

  cprof_stop();
  CHECK(cprof_addr() == NULL);
  CHECK_EQ_INT(get_status(addr, "/debug/pprof/cmdline"), -1);

  /* The same port again: stop released it. */
  cprof_options_t same = {.addr = addr};
  CHECK_EQ_INT(cprof_start(&same), 0);
  CHECK_EQ_INT(get_status(addr, "/debug/pprof/cmdline"), 200);

  /* A second server on a port in use fails with EADDRINUSE; the first runs on. */
  cprof_stop();
  int holder = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t sl = sizeof sa;
  bind(holder, (struct sockaddr *)&sa, sizeof sa);
  listen(holder, 1);
  getsockname(holder, (struct sockaddr *)&sa, &sl);
  char busy[64];
  snprintf(busy, sizeof busy, "127.0.0.1:%d", ntohs(sa.sin_port));
  cprof_options_t b = {.addr = busy};
  CHECK_EQ_INT(cprof_start(&b), -EADDRINUSE);
  CHECK(cprof_addr() == NULL);
  CHECK_EQ_STR(cprof_strerror(-EADDRINUSE), "Address already in use");
  cprof_stop();
  close(holder);
  return check_result("test_server");
}
