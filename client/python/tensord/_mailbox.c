/* The session region's mailbox for the Python client (proto/mailbox.h has the
 * layout, docs/protocol.md "Mailbox" the protocol): the daemon announces the
 * answer to a Get that asked for it in the region's first page and wakes a
 * process-shared futex on a 32-bit word there. A Python thread waiting for
 * that answer waits here, without the GIL: it spins a little (a sleeping
 * thread takes tens of microseconds to wake on a VM, more than the rest of a
 * round trip), then sleeps on the futex. The client's reader thread stores a
 * word of its own (the request id with the high bit set) and wakes the futex
 * when the stream answered first, so the waiter never sleeps past an answer;
 * a timeout bounds every sleep besides, and the caller re-checks its state.
 *
 * Optional like _speedups.c: without it the client waits for the stream's
 * answer (tools/build_python_ext.sh builds both).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ID_MASK 0x7fffffffu

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void pause_a_little(void) {
  for (int i = 0; i < 64; ++i) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
}

/* wait(address, mine, spin_us, timeout_us) -> int: the word at `address`
 * once its low 31 bits are `mine` (announced, or woken by the client's own
 * reader), else whatever it holds after `timeout_us`. */
static PyObject* py_wait(PyObject* self, PyObject* args) {
  unsigned long long address;
  unsigned int mine;
  long spin_us, timeout_us;
  if (!PyArg_ParseTuple(args, "KIll", &address, &mine, &spin_us, &timeout_us))
    return NULL;
  if (address == 0 || address % 4 != 0) {
    PyErr_SetString(PyExc_ValueError, "mailbox.wait: a misaligned word");
    return NULL;
  }
  uint32_t* word = (uint32_t*)(uintptr_t)address;
  uint32_t w;
  Py_BEGIN_ALLOW_THREADS;
  const uint64_t start = now_ns();
  const uint64_t spin_end = start + (uint64_t)(spin_us > 0 ? spin_us : 0) * 1000;
  const uint64_t end = start + (uint64_t)(timeout_us > 0 ? timeout_us : 0) * 1000;
  for (;;) {
    w = __atomic_load_n(word, __ATOMIC_ACQUIRE);
    if ((w & ID_MASK) == (mine & ID_MASK)) break;
    const uint64_t t = now_ns();
    if (t >= end) break;
    if (t < spin_end) {
      pause_a_little();
      continue;
    }
    const uint64_t left = end - t;
    struct timespec ts = {(time_t)(left / 1000000000u),
                          (long)(left % 1000000000u)};
    /* Returns at once when the word is no longer `w`; may wake spuriously. */
    syscall(SYS_futex, word, FUTEX_WAIT, w, &ts, NULL, 0);
  }
  Py_END_ALLOW_THREADS;
  return PyLong_FromUnsignedLong(w);
}

/* wake(address, value): stores `value` (release) and wakes every waiter on
 * the word, in any process. */
static PyObject* py_wake(PyObject* self, PyObject* args) {
  unsigned long long address;
  unsigned int value;
  if (!PyArg_ParseTuple(args, "KI", &address, &value)) return NULL;
  if (address == 0 || address % 4 != 0) {
    PyErr_SetString(PyExc_ValueError, "mailbox.wake: a misaligned word");
    return NULL;
  }
  uint32_t* word = (uint32_t*)(uintptr_t)address;
  __atomic_store_n(word, (uint32_t)value, __ATOMIC_RELEASE);
  syscall(SYS_futex, word, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"wait", py_wait, METH_VARARGS,
     "wait(address, mine, spin_us, timeout_us): the mailbox word once it names "
     "`mine`, else after the timeout (without the GIL)."},
    {"wake", py_wake, METH_VARARGS,
     "wake(address, value): stores the word and wakes its waiters."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_mailbox",
    "The session region's mailbox word: wait and wake without the GIL.", -1,
    methods,
};

PyMODINIT_FUNC PyInit__mailbox(void) { return PyModule_Create(&module); }
