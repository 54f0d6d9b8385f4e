/* The floor for reading one file per blob: open, fstat, read into a reused
 * buffer, close, over kvtest's random key sequence, and nothing else.
 * bench/overhead.sh compares blobbench's posix read path with this loop.
 *
 *   bare_read DIR COUNT MAX_ID   -> prints microseconds per read
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc != 4) { fprintf(stderr, "usage: bare_read DIR COUNT MAX_ID\n"); return 2; }
  const char *dir = argv[1];
  long count = atol(argv[2]), max_id = atol(argv[3]);
  static char buf[1 << 20];
  char path[4096];
  unsigned x = 0x333a13cd, y = 0xecb2adea, key = 1; /* kvtest's generator */
  struct timespec t0, t1;
  long done = 0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (done < count) {
    snprintf(path, sizeof path, "%s/%06u", dir, key);
    int fd = open(path, O_RDONLY);
    if (fd >= 0) {
      struct stat st;
      fstat(fd, &st);
      size_t want = (size_t)st.st_size < sizeof buf ? (size_t)st.st_size : sizeof buf; /* never past buf */
      if (read(fd, buf, want) > 0) done++;
      close(fd);
    }
    x = (x >> 1) ^ ((1 + ~(x & 1)) & 0xd0000001);
    y = y * 1103515245 + 12345;
    key = (x ^ y) % (unsigned)max_id + 1;
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double us = (t1.tv_sec - t0.tv_sec) * 1e6 + (t1.tv_nsec - t0.tv_nsec) / 1e3;
  printf("%.3f\n", us / count);
  return 0;
}
