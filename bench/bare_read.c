/* The floor for reading one file per blob: open, fstat, read into a reused
 * buffer, close, over kvtest's random key sequence, and nothing else.
 * bench/overhead.sh compares blobbench's posix read path with this loop.
 *
 *   bare_read DIR COUNT MAX_ID   -> prints microseconds per read
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bare_kv.h"

int main(int argc, char **argv) {
  if (argc != 4) { fprintf(stderr, "usage: bare_read DIR COUNT MAX_ID\n"); return 2; }
  const char *dir = argv[1];
  long count = atol(argv[2]), max_id = atol(argv[3]);
  static char buf[1 << 20];
  struct kv_keys keys = kv_keys(0);
  struct timespec t0, t1;
  long done = 0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (done < count) {
    if (kv_read_file(dir, keys.key, buf, sizeof buf) > 0) done++;
    kv_next(&keys, (unsigned)max_id);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double us = (t1.tv_sec - t0.tv_sec) * 1e6 + (t1.tv_nsec - t0.tv_nsec) / 1e3;
  printf("%.3f\n", us / count);
  return 0;
}
