/* The session region's command ring for the Python client
 * (proto/command_ring.h has the layout, docs/protocol.md "Command ring" the
 * protocol): a frame is written into shared memory and the daemon's reader
 * is woken by a futex, instead of going through gRPC Python's send path
 * (60-150 us a frame on 2 vCPUs, BENCHMARKS.md). Every wait here is bounded
 * by its timeout and runs without the GIL; callers re-check their session
 * between waits. One thread at a time writes (the session's lock).
 *
 * Optional like _mailbox.c: without it the client sends every frame on the
 * stream (tools/build_python_ext.sh builds it).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <linux/futex.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* proto/command_ring.h */
#define HEAD 0
#define TAIL 64
#define DOORBELL 128
#define DAEMON_IDLE 132
#define SPACE 192
#define CLIENT_WAITING 196
#define STREAM_SEQ 256
#define ACK_WANTED 320
#define HEADER 8
#define MAGIC 0x474e4952u
#define WRAP 0xffffffffu

#define U64(c, off) ((uint64_t*)((c) + (off)))
#define U32(c, off) ((uint32_t*)((c) + (off)))

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int aligned(unsigned long long control, unsigned long long records,
                   unsigned long long size) {
  return control != 0 && records != 0 && control % 4096 == 0 &&
         records % 8 == 0 && size >= 4096 && (size & (size - 1)) == 0;
}

/* Kinds of wait: room for `need` bytes, the ring drained, stream_seq. */
enum { ROOM, DRAINED, STREAM };

static int ready(char* c, int kind, uint64_t size, uint64_t value) {
  const uint64_t head = __atomic_load_n(U64(c, HEAD), __ATOMIC_SEQ_CST);
  const uint64_t tail = __atomic_load_n(U64(c, TAIL), __ATOMIC_SEQ_CST);
  if (kind == ROOM) return size - (head - tail) >= value;
  if (kind == DRAINED) return head == tail;
  return __atomic_load_n(U64(c, STREAM_SEQ), __ATOMIC_SEQ_CST) >= value;
}

/* Waits (GIL released by the caller) until ready() or the timeout; 1 when
 * ready. The daemon bumps `space` and wakes it after it moves the tail or
 * stream_seq while client_waiting is set (Dekker: flag, then re-check). */
static int wait_until(char* c, int kind, uint64_t size, uint64_t value,
                      long timeout_us) {
  const uint64_t end = now_ns() + (uint64_t)(timeout_us > 0 ? timeout_us : 0) * 1000;
  int ok = 0;
  for (;;) {
    if (ready(c, kind, size, value)) {
      ok = 1;
      break;
    }
    const uint64_t t = now_ns();
    if (t >= end) break;
    const uint32_t seen = __atomic_load_n(U32(c, SPACE), __ATOMIC_SEQ_CST);
    __atomic_store_n(U32(c, CLIENT_WAITING), 1, __ATOMIC_SEQ_CST);
    if (!ready(c, kind, size, value)) {
      const uint64_t left = end - t;
      struct timespec ts = {(time_t)(left / 1000000000u),
                            (long)(left % 1000000000u)};
      syscall(SYS_futex, U32(c, SPACE), FUTEX_WAIT, seen, &ts, NULL, 0);
    }
    __atomic_store_n(U32(c, CLIENT_WAITING), 0, __ATOMIC_SEQ_CST);
  }
  return ok;
}

/* Wakes the daemon's reader if it sleeps (after a store it must see). */
static void ring_doorbell(char* c) {
  /* Dekker with the reader: it sets daemon_idle, then re-reads the words. */
  if (__atomic_load_n(U32(c, DAEMON_IDLE), __ATOMIC_SEQ_CST)) {
    __atomic_fetch_add(U32(c, DOORBELL), 1, __ATOMIC_SEQ_CST);
    syscall(SYS_futex, U32(c, DOORBELL), FUTEX_WAKE, 1, NULL, NULL, 0);
  }
}

/* put(control, records, size, frame, timeout_us) -> bool: writes `frame` as
 * one record and wakes the daemon's reader if it sleeps; False when the ring
 * had no room within the timeout (nothing written). */
static PyObject* py_put(PyObject* self, PyObject* args) {
  unsigned long long control, records, size;
  Py_buffer frame;
  long timeout_us;
  if (!PyArg_ParseTuple(args, "KKKy*l", &control, &records, &size, &frame,
                        &timeout_us))
    return NULL;
  if (!aligned(control, records, size) ||
      (uint64_t)frame.len + HEADER > size / 2) {
    PyBuffer_Release(&frame);
    PyErr_SetString(PyExc_ValueError,
                    "ring.put: a misaligned ring or a frame over half of it");
    return NULL;
  }
  char* c = (char*)(uintptr_t)control;
  char* r = (char*)(uintptr_t)records;
  const uint64_t n = (uint64_t)frame.len;
  const uint64_t record = (HEADER + n + 7) & ~(uint64_t)7;
  uint64_t head = __atomic_load_n(U64(c, HEAD), __ATOMIC_RELAXED);
  uint64_t pos = head & (size - 1);
  const uint64_t to_end = size - pos;
  const uint64_t need = record <= to_end ? record : to_end + record;
  int ok = ready(c, ROOM, size, need);
  if (!ok) {
    Py_BEGIN_ALLOW_THREADS;
    ok = wait_until(c, ROOM, size, need, timeout_us);
    Py_END_ALLOW_THREADS;
  }
  if (ok) {
    if (record > to_end) { /* records never wrap: skip to the start */
      const uint32_t wrap = WRAP;
      memcpy(r + pos, &wrap, sizeof(wrap));
      head += to_end;
      pos = 0;
    }
    const uint32_t length = (uint32_t)n, magic = MAGIC;
    memcpy(r + pos, &length, sizeof(length));
    memcpy(r + pos + 4, &magic, sizeof(magic));
    memcpy(r + pos + HEADER, frame.buf, n);
    __atomic_store_n(U64(c, HEAD), head + record, __ATOMIC_SEQ_CST);
    ring_doorbell(c);
  }
  PyBuffer_Release(&frame);
  return PyBool_FromLong(ok);
}

/* wait(control, kind, value, timeout_us) -> bool: kind 1, the daemon read
 * every record (tail == head); kind 2, it queued the stream's batch with
 * last seq `value` (stream_seq >= value). False after the timeout. */
static PyObject* py_wait(PyObject* self, PyObject* args) {
  unsigned long long control, value;
  int kind;
  long timeout_us;
  if (!PyArg_ParseTuple(args, "KiKl", &control, &kind, &value, &timeout_us))
    return NULL;
  if (control == 0 || control % 4096 != 0 || (kind != DRAINED && kind != STREAM)) {
    PyErr_SetString(PyExc_ValueError, "ring.wait: bad ring or kind");
    return NULL;
  }
  char* c = (char*)(uintptr_t)control;
  int ok = ready(c, kind, 0, value);
  if (!ok) {
    Py_BEGIN_ALLOW_THREADS;
    ok = wait_until(c, kind, 0, value, timeout_us);
    Py_END_ALLOW_THREADS;
  }
  return PyBool_FromLong(ok);
}

/* want_ack(control, seq): the client waits for the Ack of command `seq`:
 * raises ack_wanted to it and wakes the reader, which then sends the Acks
 * it holds back (Note [Held acks], server/session_outbox.h). */
static PyObject* py_want_ack(PyObject* self, PyObject* args) {
  unsigned long long control, seq;
  if (!PyArg_ParseTuple(args, "KK", &control, &seq)) return NULL;
  if (control == 0 || control % 4096 != 0) {
    PyErr_SetString(PyExc_ValueError, "ring.want_ack: bad ring");
    return NULL;
  }
  char* c = (char*)(uintptr_t)control;
  if (__atomic_load_n(U64(c, ACK_WANTED), __ATOMIC_RELAXED) < seq) {
    __atomic_store_n(U64(c, ACK_WANTED), (uint64_t)seq, __ATOMIC_SEQ_CST);
    ring_doorbell(c);
  }
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"want_ack", py_want_ack, METH_VARARGS,
     "want_ack(control, seq): asks the daemon for the Acks it holds back, "
     "up to command `seq`."},
    {"put", py_put, METH_VARARGS,
     "put(control, records, size, frame, timeout_us): writes one record; "
     "False when there was no room in time."},
    {"wait", py_wait, METH_VARARGS,
     "wait(control, kind, value, timeout_us): 1 drained, 2 stream_seq >= "
     "value; False after the timeout."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_ring",
    "The session region's command ring: write frames, wait for the reader.",
    -1, methods,
};

PyMODINIT_FUNC PyInit__ring(void) {
  PyObject* m = PyModule_Create(&module);
  if (m == NULL) return NULL;
  if (PyModule_AddIntConstant(m, "DRAINED", DRAINED) < 0 ||
      PyModule_AddIntConstant(m, "STREAM", STREAM) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
