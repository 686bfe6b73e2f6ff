// The link properties the cluster bench's bound uses, measured between two network namespaces
// over TCP (as every library under test talks):
//   netpp serve PORT                      answers one client, then exits
//   netpp rtt HOST PORT [N]               N (default 2000) 8-byte ping-pongs, TCP_NODELAY;
//                                         prints {"rtt_us_median": .., "rtt_us_min": ..}
//   netpp stream HOST PORT [MIB]          one stream of MIB (default 256) MiB; prints
//                                         {"goodput_gbit_s": ..} (payload bits per second)
// A client's first byte says which test it runs. Every wait is bounded (SO_RCVTIMEO 30 s).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void setup(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  struct timeval tv = {30, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static int full(int fd, char* buf, size_t n, int send_side) {
  size_t done = 0;
  while (done < n) {
    ssize_t k = send_side ? send(fd, buf + done, n - done, MSG_NOSIGNAL) : recv(fd, buf + done, n - done, 0);
    if (k <= 0) return -1;
    done += (size_t)k;
  }
  return 0;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

enum { kChunk = 1 << 20 };

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: netpp serve PORT | rtt HOST PORT [N] | stream HOST PORT [MIB]\n");
    return 2;
  }
  static char buf[kChunk];
  if (strcmp(argv[1], "serve") == 0) {
    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2]))};
    if (bind(ls, (struct sockaddr*)&a, sizeof(a)) != 0 || listen(ls, 1) != 0) { perror("bind"); return 1; }
    struct timeval tv = {60, 0};
    setsockopt(ls, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    int fd = accept(ls, NULL, NULL);
    if (fd < 0) { perror("accept"); return 1; }
    setup(fd);
    char mode;
    if (full(fd, &mode, 1, 0) != 0) return 1;
    if (mode == 'r') {
      while (full(fd, buf, 8, 0) == 0) {
        if (full(fd, buf, 8, 1) != 0) break;
      }
    } else {
      while (recv(fd, buf, kChunk, 0) > 0) {}
      full(fd, buf, 1, 1);  // the end, acknowledged
    }
    close(fd);
    return 0;
  }
  if (argc < 4) return 2;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[3]))};
  inet_pton(AF_INET, argv[2], &a.sin_addr);
  int tries = 0;
  while (connect(fd, (struct sockaddr*)&a, sizeof(a)) != 0) {
    if (++tries > 100) { perror("connect"); return 1; }
    close(fd);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    usleep(50000);
  }
  setup(fd);
  if (strcmp(argv[1], "rtt") == 0) {
    int n = argc > 4 ? atoi(argv[4]) : 2000;
    if (n < 10) n = 10;
    double* t = calloc((size_t)n, sizeof(double));
    if (full(fd, "r", 1, 1) != 0) return 1;
    for (int i = 0; i < n / 10; ++i) {  // warm-up
      if (full(fd, buf, 8, 1) || full(fd, buf, 8, 0)) return 1;
    }
    for (int i = 0; i < n; ++i) {
      double t0 = now_us();
      if (full(fd, buf, 8, 1) || full(fd, buf, 8, 0)) return 1;
      t[i] = now_us() - t0;
    }
    qsort(t, (size_t)n, sizeof(double), cmp_double);
    printf("{\"rtt_us_median\": %.2f, \"rtt_us_min\": %.2f, \"n\": %d}\n", t[n / 2], t[0], n);
    return 0;
  }
  long mib = argc > 4 ? atol(argv[4]) : 256;
  memset(buf, 1, sizeof(buf));
  if (full(fd, "s", 1, 1) != 0) return 1;
  double t0 = now_us();
  for (long i = 0; i < mib; ++i) {
    if (full(fd, buf, kChunk, 1) != 0) return 1;
  }
  shutdown(fd, SHUT_WR);
  if (full(fd, buf, 1, 0) != 0) return 1;
  double s = (now_us() - t0) / 1e6;
  printf("{\"goodput_gbit_s\": %.4f, \"mib\": %ld}\n", mib * (double)kChunk * 8 / s / 1e9, mib);
  return 0;
}
