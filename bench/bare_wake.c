/* The floor for an open loop's waits: N threads, each sleeping to the
 * absolute due times of its share of RATE per second (clock_nanosleep with
 * TIMER_ABSTIME, timer slack 1 ns, as blobbench's clients wait), doing
 * nothing when it wakes. What a wake-up costs this machine's cores, with no
 * harness and no store: bench/open-loop-cpu.sh sets blobbench's CPU per due
 * operation beside it. Given DIR and COUNT, each wake-up then reads one file
 * of DIR (open, fstat, read, close, as bench/bare_read.c, a key from 1 to
 * COUNT by kvtest's generator seeded per thread): the waits and the read with
 * no harness, so blobbench less this is its harness's own CPU, the read
 * costing what it costs after a sleep (cache-cold), not in a closed loop.
 *
 *   bare_wake N RATE SECONDS [DIR COUNT]  -> prints "wakes W cpu_s C us_per_wake U"
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>

#include "bare_kv.h"

static long clients, rate;
static double seconds;
static struct timespec start;
static const char *dir; /* NULL: wake and do nothing */
static unsigned count;

static long long ns(struct timespec t) { return t.tv_sec * 1000000000LL + t.tv_nsec; }

static void *client(void *arg) {
  long i = (long)arg;
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  long long interval = 1000000000LL * clients / rate;
  long long due = ns(start) + interval * i / clients, end = ns(start) + (long long)(seconds * 1e9);
  long wakes = 0;
  static __thread char buf[1 << 20];
  struct kv_keys keys = kv_keys((unsigned)i);
  for (; due < end; due += interval) {
    struct timespec t = {due / 1000000000LL, due % 1000000000LL};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL)) {}
    wakes++;
    if (!dir) continue;
    if (kv_read_file(dir, keys.key, buf, sizeof buf) < 0) {
      fprintf(stderr, "%s/%06u: %s\n", dir, keys.key, strerror(errno));
      exit(1);
    }
    kv_next(&keys, count);
  }
  return (void *)wakes;
}

int main(int argc, char **argv) {
  if (argc != 4 && argc != 6) { fprintf(stderr, "usage: bare_wake N RATE SECONDS [DIR COUNT]\n"); return 2; }
  clients = atol(argv[1]), rate = atol(argv[2]), seconds = atof(argv[3]);
  if (argc == 6) dir = argv[4], count = (unsigned)atol(argv[5]);
  if (dir && count < 1) { fprintf(stderr, "bare_wake: COUNT >= 1\n"); return 2; }
  if (clients < 1 || rate < clients || seconds <= 0) { fprintf(stderr, "bare_wake: N >= 1, RATE >= N, SECONDS > 0\n"); return 2; }
  pthread_t *t = calloc(clients, sizeof *t);
  clock_gettime(CLOCK_MONOTONIC, &start);
  start.tv_sec += 1; /* every thread made before the first due time */
  for (long i = 0; i < clients; i++) pthread_create(&t[i], NULL, client, (void *)i);
  long wakes = 0;
  for (long i = 0; i < clients; i++) {
    void *w;
    pthread_join(t[i], &w);
    wakes += (long)w;
  }
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  double cpu = u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6;
  printf("wakes %ld cpu_s %.3f us_per_wake %.2f\n", wakes, cpu, cpu * 1e6 / wakes);
  return 0;
}
