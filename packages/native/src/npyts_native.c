/*
 * @npyts/native: what JavaScript cannot do for @npyts/core in Node.
 *
 *  adviseHugePages(bytes)          madvise(MADV_HUGEPAGE) on the 2 MiB pages inside a fresh buffer,
 *                                  so that first touch faults 2 MiB at a time (numpy does the same
 *                                  for its own arrays of 4 MiB and more).
 *  preallocate(fd, offset, length) fallocate(FALLOC_FL_KEEP_SIZE) before a large write, as numpy's
 *                                  np.save does, so the filesystem reserves extents in one call.
 *  swapBytes(bytes, unit)          reverse every `unit`-byte group (2, 4, 8 or 16) in place.
 *  permutePlane(src, dst, nA, nB, srcStrideB, dstStrideA, itemBytes, threads)
 *                                  the tiled copy at the heart of C <-> Fortran order: item (i, j) of
 *                                  the plane moves from src[i*item + j*srcStrideB] to
 *                                  dst[i*dstStrideA + j*item], in 64x64 tiles, on several threads.
 *  preadParallel(fd, bytes, position, threads)
 *                                  fill `bytes` from the file at `position` with several threads at
 *                                  once, so that page faults and copies of a large read use every
 *                                  core; returns the bytes read before the first short piece, or
 *                                  -errno.
 *  lockFile(fd, lock)              flock(fd, LOCK_EX) when `lock` is 1 (waits for other holders),
 *                                  flock(fd, LOCK_UN) when 0: serialises appends across processes.
 *                                  Returns 0 or errno.
 *  tryLockFile(fd)                 flock(fd, LOCK_EX | LOCK_NB): 0, or EWOULDBLOCK while another
 *                                  holds it (async callers poll instead of blocking the event loop).
 *  gatherStrided(fd, base, runLength, dims, out)
 *                                  copy a strided region of the file into `out`: `dims` is a Uint8Array
 *                                  over float64 [counts…, strides…] of the outer axes (slowest first);
 *                                  each index of them is one run of `runLength` bytes at base + Σ
 *                                  index × stride. The file is mapped read-only 16 MiB at a time and
 *                                  copied out in C, so a column of millions of runs costs the pages
 *                                  it touches, not a call per run, and resident memory stays the
 *                                  region plus one window. Returns the bytes copied or -errno.
 *  mapFile(fd, offset, length, mode)
 *                                  an ArrayBuffer over mmap of `length` bytes of the file at `offset`
 *                                  (mapped from the page below it): mode 0 reads (private, so a stray
 *                                  write from JavaScript stays in memory instead of faulting), 1 reads
 *                                  and writes the file (shared), 2 is copy-on-write (private). The
 *                                  mapping is removed when the ArrayBuffer is collected. Maps over
 *                                  4 GiB use V8's external backing store (external_buffer.cc).
 *  unmapFile(arraybuffer, sync, detach)
 *                                  msync the mapping when `sync` is 1; detach the buffer when `detach`
 *                                  is 1 (its views become empty, so nothing can touch the pages again).
 *  inflateRaw(src, dst)            (built with libdeflate, when its headers are there) inflate the raw
 *                                  deflate stream `src` into `dst`, which must be its exact size:
 *                                  returns the bytes written, -1 for a corrupt stream, -2 when the
 *                                  stream holds more than `dst` (libdeflate is about 1.6 × zlib).
 *  inflateRawAsync(src, dst)       the same on libuv's thread pool: a promise of that number.
 *  inflateNpyAsync(src, size)      on libuv's thread pool, inflate `src` (at most `size` bytes out)
 *                                  into memory of the addon's, with its CRC-32; where the output
 *                                  starts as a .npy, split it at the data: a promise of [written,
 *                                  crc, header, data], `header` a copy of the bytes before the data
 *                                  and `data` an ArrayBuffer over the rest, with no copy (freed when
 *                                  collected); [written] alone when `written` < 0 as above.
 *  crc32(bytes, crc)               (with libdeflate) the zip CRC-32 of `bytes` continuing from `crc`.
 *
 * Every function takes a Uint8Array and touches only the bytes it views.
 */
#define _GNU_SOURCE
#define NAPI_VERSION 8
#include <node_api.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <fcntl.h>
#include <sys/file.h>
#include <stdint.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define HUGE_PAGE ((uintptr_t)2 << 20)

static napi_value throw_type_error(napi_env env, const char *message) {
  napi_throw_type_error(env, NULL, message);
  return NULL;
}

/* The bytes a Uint8Array views, or NULL (with a TypeError pending) when the value is not one. */
static uint8_t *uint8_array_bytes(napi_env env, napi_value value, size_t *length) {
  bool is_typed = false;
  if (napi_is_typedarray(env, value, &is_typed) != napi_ok || !is_typed) return NULL;
  napi_typedarray_type type;
  void *data = NULL;
  if (napi_get_typedarray_info(env, value, &type, length, &data, NULL, NULL) != napi_ok || type != napi_uint8_array) {
    return NULL;
  }
  /* An empty array may have no memory at all: a pointer to nothing then, never touched. */
  static uint8_t nothing[1];
  return data != NULL ? data : *length == 0 ? nothing : NULL;
}

/* A call's arguments, read by kind: each 'b' (a Uint8Array) fills the next bytes/length pair, each
   'n' (a non-negative number) the next number, left to right. */
#define MAX_ARGS 8
typedef struct {
  uint8_t *bytes[2];
  size_t length[2];
  double number[MAX_ARGS];
} call_args;

static bool read_args(napi_env env, napi_callback_info info, const char *kinds, call_args *a) {
  size_t argc = MAX_ARGS;
  napi_value argv[MAX_ARGS];
  size_t want = strlen(kinds);
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < want) return false;
  int nb = 0, nn = 0;
  for (size_t k = 0; k < want; k++) {
    if (kinds[k] == 'b') {
      a->bytes[nb] = uint8_array_bytes(env, argv[k], &a->length[nb]);
      if (a->bytes[nb++] == NULL) return false;
    } else {
      double *x = &a->number[nn++];
      if (napi_get_value_double(env, argv[k], x) != napi_ok || !(*x >= 0)) return false;
    }
  }
  return true;
}

static napi_value number(napi_env env, double x) {
  napi_value out;
  napi_create_double(env, x, &out);
  return out;
}

static napi_value advise_huge_pages(napi_env env, napi_callback_info info) {
  call_args a;
  if (!read_args(env, info, "b", &a)) return throw_type_error(env, "adviseHugePages(bytes): bytes must be a Uint8Array");
  uint8_t *bytes = a.bytes[0];
  size_t length = a.length[0];
#ifdef MADV_HUGEPAGE
  /* Only whole huge pages inside the buffer: never advise memory the buffer does not own. */
  uintptr_t start = ((uintptr_t)bytes + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
  uintptr_t end = ((uintptr_t)bytes + length) & ~(HUGE_PAGE - 1);
  if (end > start && madvise((void *)start, end - start, MADV_HUGEPAGE) == 0) return number(env, (double)(end - start));
#endif
  return number(env, 0);
}

static napi_value preallocate(napi_env env, napi_callback_info info) {
  call_args a;
  if (!read_args(env, info, "nnn", &a)) return throw_type_error(env, "preallocate(fd, offset, length): three non-negative numbers");
  double fd = a.number[0], offset = a.number[1], length = a.number[2];
#if defined(__linux__) && defined(FALLOC_FL_KEEP_SIZE)
  /* KEEP_SIZE: reserve blocks without changing the file's length, so a failed write leaves no tail. */
  if (length == 0) return number(env, 0);
  int rc = fallocate((int)fd, FALLOC_FL_KEEP_SIZE, (off_t)offset, (off_t)length);
  return number(env, rc == 0 ? 0 : errno);
#else
  return number(env, ENOSYS);
#endif
}

/* Loads and stores through memcpy: the bytes need not be aligned, and the compiler emits plain moves. */
#define SWAP_LOOP(bits)                                            \
  static void swap##bits(uint8_t *p, size_t n) {                   \
    for (size_t i = 0; i + (bits) / 8 <= n; i += (bits) / 8) {     \
      uint##bits##_t x;                                            \
      memcpy(&x, p + i, sizeof x);                                 \
      x = __builtin_bswap##bits(x);                                \
      memcpy(p + i, &x, sizeof x);                                 \
    }                                                              \
  }
SWAP_LOOP(16)
SWAP_LOOP(32)
SWAP_LOOP(64)

static void swap128(uint8_t *p, size_t n) {
  for (size_t i = 0; i + 16 <= n; i += 16) {
    uint64_t lo, hi;
    memcpy(&lo, p + i, 8);
    memcpy(&hi, p + i + 8, 8);
    lo = __builtin_bswap64(lo);
    hi = __builtin_bswap64(hi);
    memcpy(p + i, &hi, 8);
    memcpy(p + i + 8, &lo, 8);
  }
}

static napi_value swap_bytes(napi_env env, napi_callback_info info) {
  call_args a;
  if (!read_args(env, info, "bn", &a)) return throw_type_error(env, "swapBytes(bytes, unit): a Uint8Array and a unit of 2, 4, 8 or 16");
  uint8_t *bytes = a.bytes[0];
  size_t length = a.length[0];
  switch (a.number[0] == (int)a.number[0] ? (int)a.number[0] : 0) {
    case 1: break;
    case 2: swap16(bytes, length); break;
    case 4: swap32(bytes, length); break;
    case 8: swap64(bytes, length); break;
    case 16: swap128(bytes, length); break;
    default: return throw_type_error(env, "swapBytes(bytes, unit): unit must be 1, 2, 4, 8 or 16");
  }
  return NULL;
}


/* Up to this many threads per call. */
#define MAX_THREADS 8

/* Run fn on each of `count` pieces laid out `size` bytes apart: the first on this thread, the rest on
   threads of their own (a piece that gets no thread runs here too), and wait for all of them. */
static void run_pieces(void *(*fn)(void *), void *pieces, size_t size, int count) {
  pthread_t ids[MAX_THREADS];
  int spawned[MAX_THREADS] = {0};
  for (int i = 1; i < count; i++) spawned[i] = pthread_create(&ids[i], NULL, fn, (char *)pieces + (size_t)i * size) == 0;
  fn(pieces);
  for (int i = 1; i < count; i++) {
    if (spawned[i]) pthread_join(ids[i], NULL);
    else fn((char *)pieces + (size_t)i * size);
  }
}

/* One thread's rows [i0, i1) of a plane copy. */
typedef struct {
  const uint8_t *src;
  uint8_t *dst;
  size_t i0, i1, nB, sB, dA;
  int item;
} plane_piece;

#define TILE 64
#define STAGE_BYTES (TILE * TILE * 16)

/* The source's plane rows (runs of items along i) are a power-of-two stride apart in the usual
   case, so reading a tile column by column would keep evicting its own cache lines (they all map to
   one cache set). Each tile is therefore first copied, row by contiguous row, into a small staging
   buffer, and transposed from there: every cache line of the source and the destination is then
   read or written whole, once. The width is a constant in each instance, so memcpy is one move. */
#define PLANE_LOOP(name, width)                                                            \
  static void name(const plane_piece *p) {                                                 \
    uint8_t stage[STAGE_BYTES];                                                            \
    const size_t w = (width), tile = TILE;                                                 \
    for (size_t i0 = p->i0; i0 < p->i1; i0 += tile) {                                      \
      size_t ni = i0 + tile < p->i1 ? tile : p->i1 - i0;                                   \
      for (size_t j0 = 0; j0 < p->nB; j0 += TILE) {                                        \
        size_t nj = j0 + TILE < p->nB ? TILE : p->nB - j0;                                 \
        for (size_t j = 0; j < nj; j++) memcpy(stage + j * tile * w, p->src + i0 * w + (j0 + j) * p->sB, ni * w); \
        for (size_t i = 0; i < ni; i++) {                                                  \
          uint8_t *d = p->dst + (i0 + i) * p->dA + j0 * w;                                 \
          const uint8_t *t = stage + i * w;                                                \
          for (size_t j = 0; j < nj; j++, d += w, t += tile * w) memcpy(d, t, w);    \
        }                                                                                  \
      }                                                                                    \
    }                                                                                      \
  }
PLANE_LOOP(plane1, 1)
PLANE_LOOP(plane2, 2)
PLANE_LOOP(plane4, 4)
PLANE_LOOP(plane8, 8)
PLANE_LOOP(plane16, 16)

/* Other widths (records, strings): items of many bytes each use most of a cache line themselves. */
static void plane_any(const plane_piece *p) {
  const size_t w = (size_t)p->item;
  for (size_t i0 = p->i0; i0 < p->i1; i0 += TILE) {
    size_t i1 = i0 + TILE < p->i1 ? i0 + TILE : p->i1;
    for (size_t j0 = 0; j0 < p->nB; j0 += TILE) {
      size_t j1 = j0 + TILE < p->nB ? j0 + TILE : p->nB;
      for (size_t i = i0; i < i1; i++) {
        for (size_t j = j0; j < j1; j++) memcpy(p->dst + i * p->dA + j * w, p->src + i * w + j * p->sB, w);
      }
    }
  }
}

static void *plane_run(void *arg) {
  const plane_piece *p = arg;
  switch (p->item) {
    case 1: plane1(p); break;
    case 2: plane2(p); break;
    case 4: plane4(p); break;
    case 8: plane8(p); break;
    case 16: plane16(p); break;
    default: plane_any(p);
  }
  return NULL;
}

static napi_value permute_plane(napi_env env, napi_callback_info info) {
  call_args a;
  const double *v = a.number;
  if (!read_args(env, info, "bbnnnnnn", &a) || v[4] < 1 || v[5] < 1) {
    return throw_type_error(env, "permutePlane(src, dst, nA, nB, srcStrideB, dstStrideA, itemBytes, threads): two Uint8Arrays and six non-negative numbers");
  }
  const uint8_t *src = a.bytes[0];
  uint8_t *dst = a.bytes[1];
  size_t src_len = a.length[0], dst_len = a.length[1];
  size_t nA = (size_t)v[0], nB = (size_t)v[1], sB = (size_t)v[2], dA = (size_t)v[3], item = (size_t)v[4];
  if (nA == 0 || nB == 0) return NULL;
  /* Both ends of the plane must lie inside the views: no byte outside them is read or written. */
  if ((nA - 1) * item + (nB - 1) * sB + item > src_len || (nA - 1) * dA + (nB - 1) * item + item > dst_len) {
    napi_throw_range_error(env, NULL, "permutePlane: the plane does not fit in the given views");
    return NULL;
  }
  int n = v[5] > MAX_THREADS ? MAX_THREADS : (int)v[5];
  size_t rows = (nA + (size_t)n - 1) / (size_t)n;
  rows = (rows + TILE - 1) / TILE * TILE;
  plane_piece pieces[MAX_THREADS];
  int count = 0;
  for (size_t i0 = 0; i0 < nA && count < n; i0 += rows, count++) {
    pieces[count] = (plane_piece){src, dst, i0, i0 + rows < nA ? i0 + rows : nA, nB, sB, dA, (int)item};
  }
  run_pieces(plane_run, pieces, sizeof pieces[0], count);
  return NULL;
}

/* One thread's share of a parallel read. */
typedef struct {
  int fd;
  uint8_t *bytes;
  size_t length;
  off_t position;
  size_t got;
  int error;
} read_piece;

static void *read_piece_run(void *arg) {
  read_piece *p = arg;
  while (p->got < p->length) {
    size_t want = p->length - p->got;
    if (want > ((size_t)1 << 30)) want = (size_t)1 << 30;
    ssize_t n = pread(p->fd, p->bytes + p->got, want, p->position + (off_t)p->got);
    if (n < 0) {
      if (errno == EINTR) continue;
      p->error = errno;
      break;
    }
    if (n == 0) break; /* end of file */
    p->got += (size_t)n;
  }
  return NULL;
}

static napi_value pread_parallel(napi_env env, napi_callback_info info) {
  call_args a;
  if (!read_args(env, info, "nbnn", &a) || a.number[2] < 1) {
    return throw_type_error(env, "preadParallel(fd, bytes, position, threads): a descriptor, a Uint8Array and two non-negative numbers");
  }
  uint8_t *bytes = a.bytes[0];
  size_t length = a.length[0];
  double fd = a.number[0], position = a.number[1], threads = a.number[2];
  int n = threads > MAX_THREADS ? MAX_THREADS : (int)threads;
  read_piece pieces[MAX_THREADS];
  /* Pieces on 2 MiB boundaries, so that no huge page is faulted by two threads. */
  size_t step = ((length / (size_t)n) + HUGE_PAGE - 1) & ~(size_t)(HUGE_PAGE - 1);
  int started = 0;
  for (int i = 0; i < n; i++) {
    size_t from = (size_t)i * step;
    if (from >= length && i > 0) break;
    size_t to = from + step > length || i == n - 1 ? length : from + step;
    pieces[i] = (read_piece){(int)fd, bytes + from, to - from, (off_t)position + (off_t)from, 0, 0};
    started = i + 1;
  }
  run_pieces(read_piece_run, pieces, sizeof pieces[0], started);
  /* Bytes read before the first short piece: what a sequential read would have returned. */
  double total = 0;
  for (int i = 0; i < started; i++) {
    if (pieces[i].error) return number(env, -(double)pieces[i].error);
    total += (double)pieces[i].got;
    if (pieces[i].got < pieces[i].length) break;
  }
  return number(env, total);
}

static napi_value lock_file(napi_env env, napi_callback_info info) {
  call_args a;
  if (!read_args(env, info, "nn", &a)) return throw_type_error(env, "lockFile(fd, lock): two non-negative numbers");
  int rc;
  do rc = flock((int)a.number[0], a.number[1] != 0 ? LOCK_EX : LOCK_UN);
  while (rc != 0 && errno == EINTR);
  return number(env, rc == 0 ? 0 : errno);
}

static napi_value try_lock_file(napi_env env, napi_callback_info info) {
  call_args a;
  if (!read_args(env, info, "n", &a)) return throw_type_error(env, "tryLockFile(fd): a non-negative number");
  int rc;
  do rc = flock((int)a.number[0], LOCK_EX | LOCK_NB);
  while (rc != 0 && errno == EINTR);
  return number(env, rc == 0 ? 0 : errno);
}

#define MAX_GATHER_AXES 64
/* Bytes of the file mapped at once by a gather. */
#define GATHER_WINDOW ((uint64_t)16 << 20)
/* Runs ahead whose first byte is prefetched (measured on a column of 4 KiB rows: 8 gains most, 32 a little more). */
#define PREFETCH_AHEAD 32

static napi_value gather_strided(napi_env env, napi_callback_info info) {
  call_args a;
  if (!read_args(env, info, "nnnbb", &a) || a.length[0] % 16 != 0 || a.length[0] / 16 > MAX_GATHER_AXES) {
    return throw_type_error(env, "gatherStrided(fd, base, runLength, dims, out)");
  }
  int fd = (int)a.number[0];
  uint64_t base = (uint64_t)a.number[1];
  size_t run = (size_t)a.number[2];
  size_t k = a.length[0] / 16;
  double dims[2 * MAX_GATHER_AXES];
  memcpy(dims, a.bytes[0], a.length[0]);
  uint64_t counts[MAX_GATHER_AXES], strides[MAX_GATHER_AXES], idx[MAX_GATHER_AXES];
  uint64_t runs = 1, span = run;
  for (size_t i = 0; i < k; i++) {
    counts[i] = (uint64_t)dims[i];
    strides[i] = (uint64_t)dims[k + i];
    idx[i] = 0;
    runs *= counts[i];
    if (counts[i] == 0) return number(env, 0);
    span += (counts[i] - 1) * strides[i];
  }
  if (runs * run > a.length[1]) return throw_type_error(env, "gatherStrided: out is smaller than the region");
  /* The file must still hold the span: a mapping past its end would fault (SIGBUS) on access. */
  struct stat st;
  if (fstat(fd, &st) != 0) return number(env, -(double)errno);
  if ((uint64_t)st.st_size < base + span) return number(env, -(double)EIO);
  /* The span is mapped a window at a time and each window unmapped before the next: resident
     memory stays the region plus one window, however large the span (a column of a huge file). */
  uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  uint8_t *out = a.bytes[1];
  uint8_t *window = NULL;
  uint64_t wstart = 0, wend = 0;
  for (uint64_t r = 0; r < runs; r++) {
    uint64_t off = base;
    for (size_t i = 0; i < k; i++) off += idx[i] * strides[i];
    if (window == NULL || off < wstart || off + run > wend) {
      if (window != NULL) munmap(window, (size_t)(wend - wstart));
      wstart = off - off % page;
      uint64_t want = GATHER_WINDOW > run + page ? GATHER_WINDOW : run + page;
      wend = wstart + want;
      if (wend > base + span) wend = base + span;
      window = mmap(NULL, (size_t)(wend - wstart), PROT_READ, MAP_SHARED, fd, (off_t)wstart);
      if (window == MAP_FAILED) return number(env, -(double)errno);
    }
    /* Runs of a column each sit on their own page: ask for the one PREFETCH_AHEAD runs on (along
       the innermost axis) now, so that several page misses overlap instead of queueing. */
    if (k > 0) {
      uint64_t ahead = off - wstart + PREFETCH_AHEAD * strides[k - 1];
      if (ahead < wend - wstart) __builtin_prefetch(window + ahead);
    }
    memcpy(out + r * run, window + (off - wstart), run);
    for (size_t i = k; i-- > 0;) {
      if (++idx[i] < counts[i]) break;
      idx[i] = 0;
    }
  }
  if (window != NULL) munmap(window, (size_t)(wend - wstart));
  return number(env, (double)(runs * run));
}

typedef struct {
  void *base;
  size_t length;
} mapping;

static void unmap_release(void *hint) {
  mapping *m = hint;
  if (m->base != NULL) munmap(m->base, m->length);
  free(m);
}

static void unmap_finalize(napi_env env, void *data, void *hint) {
  (void)env;
  (void)data;
  unmap_release(hint);
}

/* The finalizer of a wrapped (uncounted) map: napi_wrap hands the record as `data`. */
static void unmap_wrapped_finalize(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  unmap_release(data);
}

/* Maps above 4 GiB are made with V8's own external backing store (external_buffer.cc), which
   N-API's Buffer-based path cannot make; first a small N-API external buffer checks that this
   runtime allows external memory at all (runtimes with a memory cage refuse it). */
napi_value npyts_large_external_arraybuffer(void *data, size_t length, void (*release)(void *hint), void *hint);
int npyts_large_external_supported(void);
napi_value npyts_uncounted_arraybuffer(void *data, size_t length);
int npyts_uncounted_supported(void);

static uint8_t probe_byte;
static void probe_finalize(napi_env env, void *data, void *hint) { (void)env; (void)data; (void)hint; }

static bool external_buffers_allowed(napi_env env) {
  napi_value probe;
  return napi_create_external_arraybuffer(env, &probe_byte, 1, probe_finalize, NULL, &probe) == napi_ok;
}

static napi_value map_file(napi_env env, napi_callback_info info) {
  call_args a;
  if (!read_args(env, info, "nnnn", &a)) return throw_type_error(env, "mapFile(fd, offset, length, mode): four non-negative numbers");
  int fd = (int)a.number[0];
  uint64_t offset = (uint64_t)a.number[1];
  size_t length = (size_t)a.number[2];
  int mode = (int)a.number[3];
  bool large = a.number[2] > 4294967296.0;
  if (large && !external_buffers_allowed(env)) {
    napi_throw_error(env, "ERR_EXTERNAL_BUFFERS", "this runtime does not allow external ArrayBuffers (memory maps)");
    return NULL;
  }
  if (large && !npyts_large_external_supported()) {
    napi_throw_error(env, "ERR_EXTERNAL_BUFFERS", "this Node does not export the V8 functions that maps over 4 GiB need");
    return NULL;
  }
  long page = sysconf(_SC_PAGESIZE);
  uint64_t start = offset - offset % (uint64_t)page;
  size_t delta = (size_t)(offset - start);
  size_t total = length + delta;
  if (total == 0) total = 1; /* mmap refuses 0 bytes; an empty array still gets a (one-page) mapping */
  int prot = PROT_READ | PROT_WRITE;
  int flags = mode == 1 ? MAP_SHARED : MAP_PRIVATE;
  void *base = mmap(NULL, total, prot, flags, fd, (off_t)start);
  if (base == MAP_FAILED) {
    char message[96];
    snprintf(message, sizeof message, "mmap failed (errno %d)", errno);
    napi_throw_error(env, NULL, message);
    return NULL;
  }
  mapping *m = malloc(sizeof *m);
  m->base = base;
  m->length = total;
  napi_value buffer;
  if (npyts_uncounted_supported() && external_buffers_allowed(env)) {
    /* Not counted as V8 heap memory (external_buffer.cc); removed by the finalizer (or by unmapFile's
       detach) once no view holds the ArrayBuffer. */
    buffer = npyts_uncounted_arraybuffer((uint8_t *)base + delta, length);
    if (buffer != NULL && napi_wrap(env, buffer, m, unmap_wrapped_finalize, NULL, NULL) == napi_ok) return buffer;
    munmap(base, total);
    free(m);
    napi_throw_error(env, "ERR_EXTERNAL_BUFFERS", "this runtime does not allow external ArrayBuffers (memory maps)");
    return NULL;
  }
  if (large) return npyts_large_external_arraybuffer((uint8_t *)base + delta, length, unmap_release, m);
  if (napi_create_external_arraybuffer(env, (uint8_t *)base + delta, length, unmap_finalize, m, &buffer) != napi_ok) {
    /* Node may already have run the finalizer (it does when its Buffer refuses): touching the
       mapping again could free it twice, so it is left alone. Callers stop mapping after this. */
    napi_throw_error(env, "ERR_EXTERNAL_BUFFERS", "this runtime does not allow external ArrayBuffers (memory maps)");
    return NULL;
  }
  return buffer;
}

static napi_value unmap_file(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 3) return throw_type_error(env, "unmapFile(arraybuffer, sync, detach)");
  void *data = NULL;
  size_t length = 0;
  if (napi_get_arraybuffer_info(env, argv[0], &data, &length) != napi_ok) return throw_type_error(env, "unmapFile: not an ArrayBuffer");
  double sync = 0;
  napi_get_value_double(env, argv[1], &sync);
  int rc = 0;
  if (sync != 0 && data != NULL && length > 0) {
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t from = (uintptr_t)data - (uintptr_t)data % (uintptr_t)page;
    rc = msync((void *)from, length + ((uintptr_t)data - from), MS_SYNC) == 0 ? 0 : errno;
  }
  double detach = 0;
  napi_get_value_double(env, argv[2], &detach);
  if (detach != 0) {
    napi_detach_arraybuffer(env, argv[0]);
    /* An uncounted map (wrapped, see map_file) is removed now, as a counted one is when its
       detached backing store goes; its finalizer then only frees the record. */
    mapping *m = NULL;
    if (napi_unwrap(env, argv[0], (void **)&m) == napi_ok && m != NULL && m->base != NULL) {
      munmap(m->base, m->length);
      m->base = NULL;
    }
  }
  return number(env, rc);
}

#ifdef NPYTS_LIBDEFLATE
#include <libdeflate.h>

/* The bytes written, or -1 (corrupt), -2 (more than dst holds), -3 (no memory for a decompressor). */
static double inflate_raw_into(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len) {
  struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
  if (!d) return -3;
  size_t written = 0;
  enum libdeflate_result r = libdeflate_deflate_decompress(d, src, src_len, dst, dst_len, &written);
  libdeflate_free_decompressor(d);
  if (r == LIBDEFLATE_SUCCESS) return (double)written;
  return r == LIBDEFLATE_INSUFFICIENT_SPACE ? -2 : -1;
}

static bool two_arrays(napi_env env, napi_callback_info info, napi_value *argv, uint8_t **src, size_t *src_len, uint8_t **dst, size_t *dst_len) {
  size_t argc = 2;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2) return false;
  uint8_t **data[2] = {src, dst};
  size_t *len[2] = {src_len, dst_len};
  for (int i = 0; i < 2; i++) {
    bool is;
    napi_typedarray_type type;
    napi_value buffer;
    size_t offset;
    if (napi_is_typedarray(env, argv[i], &is) != napi_ok || !is) return false;
    if (napi_get_typedarray_info(env, argv[i], &type, len[i], (void **)data[i], &buffer, &offset) != napi_ok || type != napi_uint8_array) return false;
  }
  return true;
}

static napi_value inflate_raw(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  uint8_t *src, *dst;
  size_t src_len, dst_len;
  if (!two_arrays(env, info, argv, &src, &src_len, &dst, &dst_len)) return throw_type_error(env, "inflateRaw(src, dst): two Uint8Arrays");
  return number(env, inflate_raw_into(src, src_len, dst, dst_len));
}

typedef struct {
  napi_async_work work;
  napi_deferred deferred;
  napi_ref keep[2];
  uint8_t *src, *dst;
  size_t src_len, dst_len;
  double result;
} inflate_job;

static void inflate_execute(napi_env env, void *data) {
  (void)env;
  inflate_job *job = data;
  job->result = inflate_raw_into(job->src, job->src_len, job->dst, job->dst_len);
}

static void inflate_complete(napi_env env, napi_status status, void *data) {
  inflate_job *job = data;
  for (int i = 0; i < 2; i++) napi_delete_reference(env, job->keep[i]);
  napi_value result = number(env, status == napi_ok ? job->result : -3);
  napi_resolve_deferred(env, job->deferred, result);
  napi_delete_async_work(env, job->work);
  free(job);
}

/* Queue `execute` on libuv's thread pool, `complete` after it on the JS thread: a promise it settles. */
static napi_value queue_work(napi_env env, const char *label, napi_async_execute_callback execute, napi_async_complete_callback complete, void *data,
                             napi_async_work *work, napi_deferred *deferred) {
  napi_value promise, name;
  napi_create_promise(env, deferred, &promise);
  napi_create_string_utf8(env, label, NAPI_AUTO_LENGTH, &name);
  napi_create_async_work(env, NULL, name, execute, complete, data, work);
  napi_queue_async_work(env, *work);
  return promise;
}

static napi_value inflate_raw_async(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  inflate_job *job = calloc(1, sizeof *job);
  if (!job) return throw_type_error(env, "inflateRawAsync: out of memory");
  if (!two_arrays(env, info, argv, &job->src, &job->src_len, &job->dst, &job->dst_len)) {
    free(job);
    return throw_type_error(env, "inflateRawAsync(src, dst): two Uint8Arrays");
  }
  /* The arrays stay alive (and their memory in place) until the work is done. */
  for (int i = 0; i < 2; i++) napi_create_reference(env, argv[i], 1, &job->keep[i]);
  return queue_work(env, "npyts.inflateRaw", inflate_execute, inflate_complete, job, &job->work, &job->deferred);
}

/* Where a .npy's data starts in `b` (its header is all there), or 0 when `b` does not start as one. */
static size_t npy_data_offset(const uint8_t *b, size_t n) {
  if (n < 10 || memcmp(b, "\x93NUMPY", 6) != 0) return 0;
  size_t offset;
  if (b[6] == 1) offset = 10 + ((size_t)b[8] | (size_t)b[9] << 8);
  else if ((b[6] == 2 || b[6] == 3) && n >= 12) offset = 12 + ((size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24);
  else return 0;
  return offset <= n ? offset : 0;
}

typedef struct {
  napi_async_work work;
  napi_deferred deferred;
  napi_ref keep;
  uint8_t *src, *out;
  size_t src_len, size, data_offset;
  double result;
  uint32_t crc;
} npy_inflate_job;

static void npy_inflate_execute(napi_env env, void *data) {
  (void)env;
  npy_inflate_job *job = data;
  job->out = malloc(job->size ? job->size : 1);
  if (!job->out) {
    job->result = -3;
    return;
  }
  job->result = inflate_raw_into(job->src, job->src_len, job->out, job->size);
  if (job->result < 0) return;
  size_t written = (size_t)job->result;
  job->crc = libdeflate_crc32(0, job->out, written);
  job->data_offset = npy_data_offset(job->out, written);
}

static void free_finalize(napi_env env, void *data, void *hint) {
  (void)env;
  (void)data;
  free(hint);
}

static void npy_inflate_complete(napi_env env, napi_status status, void *data) {
  npy_inflate_job *job = data;
  napi_delete_reference(env, job->keep);
  if (status != napi_ok && job->result >= 0) job->result = -3;
  napi_value result, item;
  napi_create_array(env, &result);
  napi_set_element(env, result, 0, number(env, job->result));
  if (job->result >= 0) {
    size_t written = (size_t)job->result;
    napi_set_element(env, result, 1, number(env, (double)job->crc));
    void *head_bytes;
    napi_create_arraybuffer(env, job->data_offset, &head_bytes, &item);
    if (job->data_offset) memcpy(head_bytes, job->out, job->data_offset);
    napi_set_element(env, result, 2, item);
    /* The data stays where it was inflated: an ArrayBuffer over it frees the block when collected
       (members are under 4 GiB, N-API's limit). A runtime that refuses external memory (asked first,
       as map_file asks, so the block is still ours) gets a copy. */
    size_t length = written - job->data_offset;
    if (external_buffers_allowed(env)) {
      if (napi_create_external_arraybuffer(env, job->out + job->data_offset, length, free_finalize, job->out, &item) != napi_ok) item = NULL;
    } else {
      void *copy;
      if (napi_create_arraybuffer(env, length, &copy, &item) == napi_ok) memcpy(copy, job->out + job->data_offset, length);
      else item = NULL;
      free(job->out);
    }
    /* Not handed over (no memory): the promise says so, as for a decompressor that could not start. */
    if (item == NULL) napi_set_element(env, result, 0, number(env, -3));
    else napi_set_element(env, result, 3, item);
  } else {
    free(job->out);
  }
  napi_resolve_deferred(env, job->deferred, result);
  napi_delete_async_work(env, job->work);
  free(job);
}

static napi_value inflate_npy_async(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2) return throw_type_error(env, "inflateNpyAsync(src, size)");
  npy_inflate_job *job = calloc(1, sizeof *job);
  if (!job) return throw_type_error(env, "inflateNpyAsync: out of memory");
  bool is_typed = false;
  napi_typedarray_type type = napi_int8_array;
  if (napi_is_typedarray(env, argv[0], &is_typed) == napi_ok && is_typed)
    napi_get_typedarray_info(env, argv[0], &type, &job->src_len, (void **)&job->src, NULL, NULL);
  double size = -1;
  napi_get_value_double(env, argv[1], &size);
  if (!is_typed || type != napi_uint8_array || !(size >= 0)) {
    free(job);
    return throw_type_error(env, "inflateNpyAsync(src, size): a Uint8Array and a count of bytes");
  }
  job->size = (size_t)size;
  napi_create_reference(env, argv[0], 1, &job->keep);
  return queue_work(env, "npyts.inflateNpy", npy_inflate_execute, npy_inflate_complete, job, &job->work, &job->deferred);
}

/* crc32(bytes, crc): the zip CRC-32 of bytes, continuing from crc, by libdeflate (carry-less
   multiplication: about 3 x zlib's speed here). */
static napi_value crc32_of(napi_env env, napi_callback_info info) {
  call_args a;
  if (!read_args(env, info, "bn", &a) || a.number[0] > 4294967295.0) return throw_type_error(env, "crc32(bytes, crc): a Uint8Array and a CRC-32");
  return number(env, (double)libdeflate_crc32((uint32_t)a.number[0], a.bytes[0], a.length[0]));
}
#endif

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor functions[] = {
    {"adviseHugePages", NULL, advise_huge_pages, NULL, NULL, NULL, napi_enumerable, NULL},
    {"preallocate", NULL, preallocate, NULL, NULL, NULL, napi_enumerable, NULL},
    {"swapBytes", NULL, swap_bytes, NULL, NULL, NULL, napi_enumerable, NULL},
    {"preadParallel", NULL, pread_parallel, NULL, NULL, NULL, napi_enumerable, NULL},
    {"permutePlane", NULL, permute_plane, NULL, NULL, NULL, napi_enumerable, NULL},
    {"lockFile", NULL, lock_file, NULL, NULL, NULL, napi_enumerable, NULL},
    {"tryLockFile", NULL, try_lock_file, NULL, NULL, NULL, napi_enumerable, NULL},
    {"mapFile", NULL, map_file, NULL, NULL, NULL, napi_enumerable, NULL},
    {"gatherStrided", NULL, gather_strided, NULL, NULL, NULL, napi_enumerable, NULL},
    {"unmapFile", NULL, unmap_file, NULL, NULL, NULL, napi_enumerable, NULL},
#ifdef NPYTS_LIBDEFLATE
    {"inflateRaw", NULL, inflate_raw, NULL, NULL, NULL, napi_enumerable, NULL},
    {"inflateRawAsync", NULL, inflate_raw_async, NULL, NULL, NULL, napi_enumerable, NULL},
    {"inflateNpyAsync", NULL, inflate_npy_async, NULL, NULL, NULL, napi_enumerable, NULL},
    {"crc32", NULL, crc32_of, NULL, NULL, NULL, napi_enumerable, NULL},
#endif
  };
  napi_define_properties(env, exports, sizeof functions / sizeof functions[0], functions);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
