/* The listening socket (listener.h). We open it ourselves, so that
 * "address in use" and friends come back as an errno for a precise stderr
 * line, and so that a port of 0 can be reported as the port the kernel
 * chose. Stopped by cprof__server_stop_keeping, the server hands its
 * socket to the program's table, and the server started again takes it
 * back into its own (server.h). */
#include "http/listener.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The address fd listens on, as "host:port", into bound. */
static void describe(int fd, int port, char *bound, size_t boundlen) {
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  char host[INET6_ADDRSTRLEN] = "?";
  int p = port;
  ss.ss_family = AF_UNSPEC;
  if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0 && ss.ss_family == AF_UNIX) {
    snprintf(bound, boundlen, "unix:%s", ((struct sockaddr_un *)&ss)->sun_path);
    return;
  }
  sl = sizeof ss;
  if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
    if (ss.ss_family == AF_INET) {
      struct sockaddr_in *in = (struct sockaddr_in *)&ss;
      inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
      p = ntohs(in->sin_port);
    } else if (ss.ss_family == AF_INET6) {
      struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
      inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
      p = ntohs(in6->sin6_port);
    }
  }
  snprintf(bound, boundlen, ss.ss_family == AF_INET6 ? "[%s]:%d" : "%s:%d", host, p);
}

/* A Unix socket at path, readable and writable by its owner only (the
 * directory is the tree's, mode 0700: tree/dir.c). */
static int open_unix(const char *path) {
  struct sockaddr_un sun = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof sun.sun_path)
    return -ENAMETOOLONG;
  strcpy(sun.sun_path, path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -errno;
  unlink(path); /* a process of the same number, gone */
  if (bind(fd, (struct sockaddr *)&sun, sizeof sun) != 0 || chmod(path, 0600) != 0 ||
      listen(fd, 64) != 0) {
    int err = -errno;
    close(fd);
    return err;
  }
  return fd;
}

int cprof__listener_open(const cprof__addr_t *a, char *bound, size_t boundlen) {
  if (a->unix_path[0]) {
    int fd = open_unix(a->unix_path);
    if (fd >= 0)
      describe(fd, 0, bound, boundlen);
    return fd;
  }
  char port[8];
  snprintf(port, sizeof port, "%d", a->port);
  struct addrinfo hints = {
      .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
  struct addrinfo *res = NULL;
  /* ":port" means every interface, IPv6 and IPv4 alike, as in Go. */
  int gai = getaddrinfo(a->host[0] ? a->host : "::", port, &hints, &res);
  if (gai != 0 && !a->host[0])
    gai = getaddrinfo("0.0.0.0", port, &hints, &res);
  if (gai != 0)
    return gai == EAI_SYSTEM ? -errno : -EADDRNOTAVAIL;

  int err = -EADDRNOTAVAIL, fd = -1;
  for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      err = -errno;
      continue;
    }
    int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ai->ai_family == AF_INET6 && !a->host[0])
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 64) == 0)
      break;
    err = -errno;
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0)
    return err;
  describe(fd, a->port, bound, boundlen);
  return fd;
}

/* The listening socket cprof__server_stop_keeping kept, numbered fd in
 * the program's table, copied into ours (pidfd_getfd, Linux 5.6, from the
 * thread group leader's table: the caller of cprof__server_start_on is the
 * program's only thread, and is the leader unless main has ended). Returns
 * the copy, or -1 to listen anew. */
int cprof__listener_adopt(int fd, const cprof__addr_t *addr, char *bound, size_t boundlen) {
  int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
  if (pidfd < 0)
    return -1;
  int own = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
  close(pidfd);
  if (own >= 0)
    describe(own, addr->port, bound, boundlen);
  return own;
}

/* The keeper, stopping for cprof__server_stop_keeping: the listening
 * socket, taken from libmicrohttpd (which then closes it no more), goes to
 * the program's table through the socket pair the caller made there. The
 * kernel holds it open while it is in flight; it goes on listening, and
 * connections wait in its backlog for the server started again. */
void cprof__listener_hand_over(int listener, int to) {
  int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
  int sock = pidfd < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, pidfd, to, 0);
  if (pidfd >= 0)
    close(pidfd);
  if (sock < 0)
    return;
  char byte = 0;
  struct iovec iov = {&byte, 1};
  union {
    struct cmsghdr h;
    char space[CMSG_SPACE(sizeof(int))];
  } c;
  memset(&c, 0, sizeof c);
  struct msghdr m = {
      .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.space, .msg_controllen = sizeof c.space};
  struct cmsghdr *h = CMSG_FIRSTHDR(&m);
  h->cmsg_level = SOL_SOCKET;
  h->cmsg_type = SCM_RIGHTS;
  h->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(h), &listener, sizeof(int));
  sendmsg(sock, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
  close(sock);
}

/* cprof__server_stop_keeping's end of the socket pair hand_over sent on. */
int cprof__listener_take_back(int from) {
  char byte;
  struct iovec iov = {&byte, 1};
  union {
    struct cmsghdr h;
    char space[CMSG_SPACE(sizeof(int))];
  } c;
  struct msghdr m = {
      .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.space, .msg_controllen = sizeof c.space};
  int fd = -1;
  if (recvmsg(from, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) == 1) {
    struct cmsghdr *h = CMSG_FIRSTHDR(&m);
    if (h && h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS &&
        h->cmsg_len == CMSG_LEN(sizeof(int)))
      memcpy(&fd, CMSG_DATA(h), sizeof(int));
  }
  return fd;
}
