/* The physical ceiling of a shared-memory collective on this machine: single-thread memcpy
 * bandwidth of a 64 MiB buffer (well past the caches), best of several runs, in GB/s of bytes
 * copied. One shm hop costs at least one such copy per byte. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  size_t bytes = (argc > 1 ? strtoull(argv[1], NULL, 10) : 64) << 20;
  int reps = argc > 2 ? atoi(argv[2]) : 10;
  char* a = malloc(bytes);
  char* b = malloc(bytes);
  if (a == NULL || b == NULL) return 1;
  memset(a, 1, bytes);
  memset(b, 2, bytes);
  double best = 0;
  for (int i = 0; i < reps; ++i) {
    double t0 = Now();
    memcpy(i % 2 ? a : b, i % 2 ? b : a, bytes);
    double gbps = bytes / (Now() - t0) / 1e9;
    if (gbps > best) best = gbps;
  }
  printf("{\"tool\": \"memcpy\", \"bytes\": %zu, \"best_gbps\": %.3f, \"check\": %d}\n", bytes, best,
         a[bytes / 2] + b[bytes / 3]);
  free(a);
  free(b);
  return 0;
}
