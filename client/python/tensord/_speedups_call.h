/* Session.call's common case in C: tensord._speedups.session_call (Note
 * [Python packed runs] in _call.py, Note [GIL as the lock] in _speedups.c).
 * Split out of _speedups.c, which includes it once (one translation unit:
 * tools/build_python_ext.sh and setup.py compile _speedups.c alone; the
 * former rebuilds when _speedups.c is newer than the module, so touch it
 * after editing a header).
 *
 * fast_call reads the session's __dict__ and either appends the Call to the
 * open batch (as a message, or as an entry of the open packed run, starting
 * a run where none can be extended) exactly as Session._call_python would,
 * or returns None, before changing anything, where the Python method must
 * run: the lock held, a flush due, the flusher to wake, a site to bind, an
 * unusual state.
 */
#ifndef TENSORD_PYTHON_SPEEDUPS_CALL_H_
#define TENSORD_PYTHON_SPEEDUPS_CALL_H_

#include "_speedups_wire.h"

/* The thread-local grad state (_grad.state), set by init(): until then
 * session_call answers None. */
static PyObject* grad_state;

/* Session attributes the call path reads and writes. */
static PyObject *s_lock, *s_locked, *s_broken, *s_closing, *s_busy,
    *s_grad_sent, *s_open, *s_seq, *s_next_handle, *s_entries, *s_frame_bytes,
    *s_max_cmds, *s_max_bytes, *s_flusher_idle, *s_enabled, *s_packed,
    *s_site_ids, *s_sent_seq, *s_run, *s_run_index, *s_run_seq, *s_run_last;

static int intern_call_names(void) {
  struct {
    PyObject** var;
    const char* text;
  } names[] = {
      {&s_lock, "_lock"},
      {&s_locked, "locked"},
      {&s_broken, "_broken"},
      {&s_closing, "_closing"},
      {&s_busy, "_busy"},
      {&s_grad_sent, "_grad_sent"},
      {&s_open, "_open"},
      {&s_seq, "_seq"},
      {&s_next_handle, "_next_handle"},
      {&s_entries, "_entries"},
      {&s_frame_bytes, "_frame_bytes"},
      {&s_max_cmds, "_max_cmds"},
      {&s_max_bytes, "_max_bytes"},
      {&s_flusher_idle, "_flusher_idle"},
      {&s_enabled, "enabled"},
      {&s_packed, "_packed"},
      {&s_site_ids, "_site_ids"},
      {&s_sent_seq, "_sent_seq"},
      {&s_run, "_run"},
      {&s_run_index, "_run_index"},
      {&s_run_seq, "_run_seq"},
      {&s_run_last, "_run_last"},
  };
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i) {
    *names[i].var = PyUnicode_InternFromString(names[i].text);
    if (*names[i].var == NULL) return -1;
  }
  return 0;
}

static uint64_t as_u64(PyObject* v, int* ok) {
  if (v == NULL || !PyLong_CheckExact(v)) {
    *ok = 0;
    return 0;
  }
  uint64_t r = PyLong_AsUnsignedLongLong(v);
  if (r == (uint64_t)-1 && PyErr_Occurred()) {
    PyErr_Clear();
    *ok = 0;
  }
  return r;
}

static PyObject* fast_call_dict(PyObject* d, int grad_on, PyObject* inputs,
                                PyObject* site, PyObject* op_part);

/* Session.call's common case; see this file's comment. Returns a new
 * (first, seq, first_varint) tuple, Py_None (new ref) for "run the Python
 * method", or NULL with an exception. */
static PyObject* fast_call(PyObject* session, PyObject* inputs, PyObject* site,
                           PyObject* op_part) {
  /* Python code may run here (a thread's first look at its grad state):
   * before any session state is read. */
  PyObject* grad = PyObject_GetAttr(grad_state, s_enabled);
  if (grad == NULL) return NULL;
  const int grad_on = PyObject_IsTrue(grad);
  Py_DECREF(grad);
  if (grad_on < 0) return NULL;

  PyObject* d = PyObject_GenericGetDict(session, NULL);
  if (d == NULL) return NULL;
  PyObject* r = fast_call_dict(d, grad_on, inputs, site, op_part);
  Py_DECREF(d);
  return r;
}

/* What fast_call read of the session, for the path that encodes the Call
 * (its dict and open batch borrowed). */
typedef struct {
  PyObject* d;
  PyObject* entries;
  int idle;     /* the flusher sleeps: the batch's first command wakes it */
  uint64_t seq; /* the Call's */
  uint64_t first, frame_bytes, max_cmds, max_bytes, sent_seq;
} CallState;

static PyObject* message_call(const CallState* st, PyObject* inputs,
                              PyObject* op_part, const char* site,
                              Py_ssize_t n_site);
static PyObject* run_call(const CallState* st, const char* op_v,
                          Py_ssize_t n_op_v, const char* site_v,
                          Py_ssize_t n_site_v, PyObject* inputs);

static PyObject* fast_call_dict(PyObject* d, int grad_on, PyObject* inputs,
                                PyObject* site, PyObject* op_part) {
  PyObject* lock = PyDict_GetItemWithError(d, s_lock);
  if (lock == NULL) {
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
  }
  PyObject* held = PyObject_CallMethodNoArgs(lock, s_locked);
  if (held == NULL) return NULL;
  const int busy_lock = held == Py_True;
  Py_DECREF(held);
  if (busy_lock) Py_RETURN_NONE;

  /* From here to the commit: Note [GIL as the lock]. */
  PyObject* broken = PyDict_GetItemWithError(d, s_broken);
  PyObject* closing = PyDict_GetItemWithError(d, s_closing);
  PyObject* busy = PyDict_GetItemWithError(d, s_busy);
  PyObject* sent = PyDict_GetItemWithError(d, s_grad_sent);
  PyObject* open = PyDict_GetItemWithError(d, s_open);
  PyObject* entries = PyDict_GetItemWithError(d, s_entries);
  PyObject* idle = PyDict_GetItemWithError(d, s_flusher_idle);
  PyObject* packed = PyDict_GetItemWithError(d, s_packed);
  if (PyErr_Occurred()) return NULL;
  if (broken != Py_None || closing != Py_False || busy != Py_None ||
      open != Py_None || sent != (grad_on ? Py_True : Py_False) ||
      entries == NULL || !PyList_CheckExact(entries) || idle == NULL ||
      packed == NULL) {
    Py_RETURN_NONE;
  }
  int ok = 1;
  CallState st;
  st.d = d;
  st.entries = entries;
  st.idle = idle != Py_False;
  st.seq = as_u64(PyDict_GetItemWithError(d, s_seq), &ok) + 1;
  st.first = as_u64(PyDict_GetItemWithError(d, s_next_handle), &ok);
  st.frame_bytes = as_u64(PyDict_GetItemWithError(d, s_frame_bytes), &ok);
  st.max_cmds = as_u64(PyDict_GetItemWithError(d, s_max_cmds), &ok);
  st.max_bytes = as_u64(PyDict_GetItemWithError(d, s_max_bytes), &ok);
  st.sent_seq = as_u64(PyDict_GetItemWithError(d, s_sent_seq), &ok);
  if (PyErr_Occurred()) return NULL;
  /* the batch's command count and first command, as _call.py counts them */
  if (!ok || st.seq - st.sent_seq >= st.max_cmds ||
      (st.seq == st.sent_seq + 1 && st.idle)) {
    Py_RETURN_NONE;
  }
  const char* site_p = PyBytes_AS_STRING(site);
  Py_ssize_t n_site = PyBytes_GET_SIZE(site);
  char site_id_field[16];
  if (packed == Py_True) {              /* Note [Python packed runs] */
    static const char kNoSite[1] = {0}; /* site id 0 */
    const char* site_v = kNoSite;
    Py_ssize_t n_site_v = 1;
    if (n_site > 0) {
      PyObject* ids = PyDict_GetItemWithError(d, s_site_ids);
      PyObject* id = ids != NULL && PyDict_CheckExact(ids)
                         ? PyDict_GetItemWithError(ids, site)
                         : NULL;
      if (PyErr_Occurred()) return NULL;
      /* unbound: the Python method binds it */
      if (id == NULL || !PyBytes_CheckExact(id) || PyBytes_GET_SIZE(id) == 0 ||
          PyBytes_GET_SIZE(id) > 10) {
        Py_RETURN_NONE;
      }
      site_v = PyBytes_AS_STRING(id);
      n_site_v = PyBytes_GET_SIZE(id);
    }
    const char* op = PyBytes_AS_STRING(op_part);
    const Py_ssize_t n_op_v = op_varint_len(op, PyBytes_GET_SIZE(op_part));
    if (n_op_v > 0) {
      return run_call(&st, op + 1, n_op_v, site_v, n_site_v, inputs);
    }
    if (n_site > 0) { /* attributes: a message, with Call.site_id */
      site_id_field[0] = 0x30;
      memcpy(site_id_field + 1, site_v, n_site_v);
      site_p = site_id_field;
      n_site = 1 + n_site_v;
    }
  }
  return message_call(&st, inputs, op_part, site_p, n_site);
}

/* The Call as a message of its own, appended to the open batch. */
static PyObject* message_call(const CallState* st, PyObject* inputs,
                              PyObject* op_part, const char* site,
                              Py_ssize_t n_site) {
  const Py_ssize_t n_in = PyBytes_GET_SIZE(inputs);
  if (n_in == 0 || n_in >= 128 || PyBytes_GET_SIZE(op_part) + n_site >= 8000) {
    Py_RETURN_NONE;
  }
  /* Allocations: bytes and ints only (not tracked by the collector). */
  PyObject* entry =
      call_entry(st->seq, PyBytes_AS_STRING(op_part), PyBytes_GET_SIZE(op_part),
                 PyBytes_AS_STRING(inputs), n_in, st->first, site, n_site);
  if (entry == NULL) return NULL;
  const uint64_t new_bytes =
      st->frame_bytes + (uint64_t)PyBytes_GET_SIZE(entry);
  if (new_bytes >= st->max_bytes) { /* a flush is due: the Python method */
    Py_DECREF(entry);
    Py_RETURN_NONE;
  }
  PyObject* d = st->d;
  PyObject* seq_o = PyLong_FromUnsignedLongLong(st->seq);
  PyObject* first_o = PyLong_FromUnsignedLongLong(st->first);
  PyObject* next_o = PyLong_FromUnsignedLongLong(st->first + 1);
  PyObject* bytes_o = PyLong_FromUnsignedLongLong(new_bytes);
  PyObject* first_v = varint_bytes(st->first);
  PyObject* result = NULL;
  if (seq_o && first_o && next_o && bytes_o && first_v &&
      PyList_Append(st->entries, entry) == 0) {
    /* Commit. Setting existing keys neither resizes the dict nor runs code
     * (the old values are ints). */
    if (PyDict_SetItem(d, s_seq, seq_o) == 0 &&
        PyDict_SetItem(d, s_next_handle, next_o) == 0 &&
        PyDict_SetItem(d, s_frame_bytes, bytes_o) == 0) {
      result = PyTuple_Pack(3, first_o, seq_o, first_v);
    }
  }
  Py_DECREF(entry);
  Py_XDECREF(seq_o);
  Py_XDECREF(first_o);
  Py_XDECREF(next_o);
  Py_XDECREF(bytes_o);
  Py_XDECREF(first_v);
  return result;
}

#define RUN_HEADER_BYTES 16 /* _call.RUN_HEADER_BYTES */

/* Resizes the run `run` to `size` bytes. Its capacity doubles when it must
 * grow: bytearray's own growth (1/8 more) would copy a batch's run some
 * sixty times, each a libc realloc. (Resizing to 2 * size allocates exactly
 * that; back to `size`, at least half of it, keeps the allocation.) */
static int grow_run(PyObject* run, Py_ssize_t size) {
  if (size + 1 > ((PyByteArrayObject*)run)->ob_alloc &&
      PyByteArray_Resize(run, 2 * size) < 0) {
    return -1;
  }
  return PyByteArray_Resize(run, size);
}

/* The Call as an entry of the open run, or of a new one (Note [Python packed
 * runs]: the run branch of _call.py's _call_python). */
static PyObject* run_call(const CallState* st, const char* op_v,
                          Py_ssize_t n_op_v, const char* site_v,
                          Py_ssize_t n_site_v, PyObject* inputs) {
  PyObject* d = st->d;
  PyObject* entries = st->entries;
  const uint64_t seq = st->seq;
  const char* in = PyBytes_AS_STRING(inputs);
  const Py_ssize_t n_in = PyBytes_GET_SIZE(inputs);
  const Py_ssize_t len = run_call_len(n_op_v, n_site_v, in, n_in, st->first);
  int ok = 1;
  PyObject* run = PyDict_GetItemWithError(d, s_run);
  const uint64_t run_last = as_u64(PyDict_GetItemWithError(d, s_run_last), &ok);
  if (PyErr_Occurred()) return NULL;
  if (!ok || run == NULL || (run != Py_None && !PyByteArray_CheckExact(run))) {
    Py_RETURN_NONE;
  }
  const int extend = run != Py_None && run_last == seq - 1;
  const uint64_t new_bytes =
      st->frame_bytes + (uint64_t)len + (extend ? 0 : RUN_HEADER_BYTES);
  if (new_bytes >= st->max_bytes) Py_RETURN_NONE; /* a flush is due */
  Py_ssize_t index = 0; /* a run to close: its place in the batch */
  uint64_t run_seq = 0;
  if (!extend && run != Py_None) {
    PyObject* index_o = PyDict_GetItemWithError(d, s_run_index);
    index = index_o != NULL && PyLong_CheckExact(index_o)
                ? PyLong_AsSsize_t(index_o)
                : -1;
    run_seq = as_u64(PyDict_GetItemWithError(d, s_run_seq), &ok);
    if (PyErr_Occurred()) return NULL;
    if (!ok || index < 0 || index >= PyList_GET_SIZE(entries) ||
        PyList_GET_ITEM(entries, index) != run) {
      Py_RETURN_NONE;
    }
  }
  /* Allocations: bytes, bytearrays and ints only (not tracked by the
   * collector), all before the first change. */
  PyObject* seq_o = PyLong_FromUnsignedLongLong(seq);
  PyObject* first_o = PyLong_FromUnsignedLongLong(st->first);
  PyObject* next_o = PyLong_FromUnsignedLongLong(st->first + 1);
  PyObject* bytes_o = PyLong_FromUnsignedLongLong(new_bytes);
  PyObject* first_v = varint_bytes(st->first);
  PyObject* closed = NULL;  /* the run left, encoded */
  PyObject* new_run = NULL; /* or the run extended */
  PyObject* index_o = NULL; /* the new run's place */
  PyObject* result = NULL;
  if (!seq_o || !first_o || !next_o || !bytes_o || !first_v) goto done;
  if (extend) {
    const Py_ssize_t old = PyByteArray_GET_SIZE(run);
    if (grow_run(run, old + len) < 0) goto done;
    run_call_write(PyByteArray_AS_STRING(run) + old, op_v, n_op_v, site_v,
                   n_site_v, in, n_in, st->first);
  } else {
    if (run != Py_None) {
      closed = run_entry(run_seq, run_last - run_seq + 1,
                         PyByteArray_AS_STRING(run), PyByteArray_GET_SIZE(run));
      if (closed == NULL) goto done;
    }
    new_run = PyByteArray_FromStringAndSize(NULL, 0);
    index_o = PyLong_FromSsize_t(PyList_GET_SIZE(entries));
    if (new_run == NULL || index_o == NULL || grow_run(new_run, len) < 0) {
      goto done;
    }
    run_call_write(PyByteArray_AS_STRING(new_run), op_v, n_op_v, site_v,
                   n_site_v, in, n_in, st->first);
    if (PyList_Append(entries, new_run) < 0) goto done;
    if (closed != NULL) { /* steals `closed`; the run stays in the dict */
      PyList_SET_ITEM(entries, index, closed);
      closed = NULL;
      Py_DECREF(run);
    }
    /* Commit (existing keys: no resize, no code; the old run is freed
     * here, a bytearray) */
    if (PyDict_SetItem(d, s_run, new_run) < 0 ||
        PyDict_SetItem(d, s_run_index, index_o) < 0 ||
        PyDict_SetItem(d, s_run_seq, seq_o) < 0) {
      goto done;
    }
  }
  if (PyDict_SetItem(d, s_run_last, seq_o) == 0 &&
      PyDict_SetItem(d, s_seq, seq_o) == 0 &&
      PyDict_SetItem(d, s_next_handle, next_o) == 0 &&
      PyDict_SetItem(d, s_frame_bytes, bytes_o) == 0) {
    result = PyTuple_Pack(3, first_o, seq_o, first_v);
  }
done:
  Py_XDECREF(seq_o);
  Py_XDECREF(first_o);
  Py_XDECREF(next_o);
  Py_XDECREF(bytes_o);
  Py_XDECREF(first_v);
  Py_XDECREF(closed);
  Py_XDECREF(new_run);
  Py_XDECREF(index_o);
  return result;
}

/* session_call(session, inputs, site_field, op_part) -> tuple or None. */
static PyObject* py_session_call(PyObject* self, PyObject* const* args,
                                 Py_ssize_t nargs) {
  if (nargs != 4 || !PyBytes_Check(args[1]) || !PyBytes_Check(args[2]) ||
      !PyBytes_Check(args[3])) {
    PyErr_SetString(PyExc_TypeError,
                    "session_call(session, inputs: bytes, site_field: bytes, "
                    "op_part: bytes)");
    return NULL;
  }
  if (grad_state == NULL) Py_RETURN_NONE;
  return fast_call(args[0], args[1], args[2], args[3]);
}

#endif /* TENSORD_PYTHON_SPEEDUPS_CALL_H_ */
