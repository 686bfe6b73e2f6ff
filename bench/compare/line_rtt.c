/* The machine's core-to-core latency at the time of a run: two threads, on the first two CPUs
 * the process may use, pass a counter back and forth through two cache lines of shared memory,
 * and the median of several batches is printed as ns per round trip. Every small-message
 * figure of a shared-memory collective rests on it (a 2-rank AllReduce costs about one one-way
 * trip plus each library's own work), and on a virtual machine it moves: this one's two vCPUs
 * gave 138 ns and ~500 ns in runs a few seconds apart, wherever the host had put them. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { kBatches = 9, kTrips = 20000 };

struct Lines {
  _Alignas(64) _Atomic uint64_t ping;
  _Alignas(64) _Atomic uint64_t pong;
};

static struct Lines lines;
static int cpus[2] = {-1, -1};

static void Pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void* Echo(void* arg) {
  (void)arg;
  Pin(cpus[1]);
  for (uint64_t i = 1; i <= (uint64_t)kBatches * kTrips; ++i) {
    while (atomic_load_explicit(&lines.ping, memory_order_acquire) != i) {
    }
    atomic_store_explicit(&lines.pong, i, memory_order_release);
  }
  return NULL;
}

static int Less(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(void) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return 1;
  for (int c = 0, k = 0; c < CPU_SETSIZE && k < 2; ++c) {
    if (CPU_ISSET(c, &allowed)) cpus[k++] = c;
  }
  if (cpus[1] < 0) {
    printf("{\"tool\": \"line_rtt\", \"rtt_ns\": null, \"why\": \"one CPU\"}\n");
    return 0;
  }
  pthread_t echo;
  if (pthread_create(&echo, NULL, Echo, NULL) != 0) return 1;
  Pin(cpus[0]);
  double batch[kBatches];
  uint64_t i = 0;
  for (int b = 0; b < kBatches; ++b) {
    const double t0 = Now();
    for (int t = 0; t < kTrips; ++t) {
      ++i;
      atomic_store_explicit(&lines.ping, i, memory_order_release);
      while (atomic_load_explicit(&lines.pong, memory_order_acquire) != i) {
      }
    }
    batch[b] = (Now() - t0) / kTrips;
  }
  pthread_join(echo, NULL);
  qsort(batch, kBatches, sizeof(batch[0]), Less);
  printf("{\"tool\": \"line_rtt\", \"cpus\": [%d, %d], \"rtt_ns\": %.0f, \"min_ns\": %.0f}\n",
         cpus[0], cpus[1], batch[kBatches / 2], batch[0]);
  return 0;
}
