/* What bench/bare_read.c and bench/bare_wake.c share: kvtest's random key
 * sequence, and one blob's read from a directory of files (open, fstat,
 * read into a reused buffer, close) with nothing else, the floor blobbench's
 * posix read path is set beside.
 */
#ifndef BARE_KV_H
#define BARE_KV_H

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

/* kvtest's generator: keys from 1 to a largest, the first 1. */
struct kv_keys { unsigned x, y, key; };

/* The generator, its first state moved by `offset` (one stream per thread). */
static inline struct kv_keys kv_keys(unsigned offset) {
  struct kv_keys k = {0x333a13cd + offset, 0xecb2adea, 1};
  return k;
}

/* Moves to the next key, from 1 to `max_id`. */
static inline void kv_next(struct kv_keys *k, unsigned max_id) {
  k->x = (k->x >> 1) ^ ((1 + ~(k->x & 1)) & 0xd0000001);
  k->y = k->y * 1103515245 + 12345;
  k->key = (k->x ^ k->y) % max_id + 1;
}

/* Reads DIR/<key as 6 digits> into `buf`, at most `cap` bytes (never past
 * it, whatever the file's size): the bytes read, or -1 with errno set. */
static inline ssize_t kv_read_file(const char *dir, unsigned key, char *buf, size_t cap) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%06u", dir, key);
  int fd = open(path, O_RDONLY);
  if (fd < 0) return -1;
  struct stat st;
  fstat(fd, &st);
  size_t want = (size_t)st.st_size < cap ? (size_t)st.st_size : cap;
  ssize_t n = read(fd, buf, want);
  close(fd);
  return n;
}

#endif
