/* Ack.packed_created in C: the twin of _packed_meta.store_packed_python
 * (Note [Packed metas] in proto/tensord.proto; proto/packed_commands.h has
 * the entry format `handle, dtype, device, flags, n, n dims`). Included by
 * _speedups.c only; tests/python/test_unit_packed_meta.py checks it against
 * the Python decoder and an encoder written from the header.
 *
 * It runs on the receiver thread under Session._lock, for every Ack of a
 * session that asked for packed metas: most handles there are temporaries
 * released before their Ack came, which cost a set lookup and no object.
 * Allocating the _Meta objects may run a collection: the Tensor finalizers it
 * runs only queue releases, without waiting for the lock this thread holds
 * (Batcher.release), and never touch the dict and set this fills and reads.
 */
#ifndef TENSORD_PYTHON_SPEEDUPS_META_H_
#define TENSORD_PYTHON_SPEEDUPS_META_H_

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdio.h>

/* Set by packed_meta_init(): _meta._Meta, _dtype.Size (tuple subclasses
 * without instance fields) and _packed_meta.DTYPES. */
static PyTypeObject *meta_type, *size_type;
static PyObject* meta_dtypes;
static PyObject* meta_no_grad_fn; /* "" */

/* The varint at p[*pos..n) into *v, advancing *pos: 0, or -1 when it is
 * truncated or over 64 bits (*pos is then past what was read). */
static int meta_varint(const unsigned char* p, Py_ssize_t n, Py_ssize_t* pos,
                       uint64_t* v) {
  uint64_t r = 0;
  for (int shift = 0; shift < 64 && *pos < n; shift += 7) {
    const unsigned char b = p[(*pos)++];
    if (shift == 63 && b > 1) return -1; /* the tenth byte: the top bit only */
    r |= (uint64_t)(b & 0x7F) << shift;
    if (b < 0x80) {
      *v = r;
      return 0;
    }
  }
  return -1;
}

/* One entry, checked: its fields, and where its dims start. */
typedef struct {
  uint64_t handle, ndim;
  uint64_t fields[3]; /* dtype, device, flags */
  Py_ssize_t dims_at;
} PackedMeta;

/* Checks the entry at *pos and moves past it: 0, or -1 with the reason in
 * `why` (the same text as store_packed_python's). */
static int meta_entry(const unsigned char* p, Py_ssize_t n, Py_ssize_t* pos,
                      Py_ssize_t n_devices, PackedMeta* e, char* why,
                      size_t why_size) {
  static const char* const names[3] = {"dtype", "device", "flags"};
  const Py_ssize_t start = *pos;
  if (meta_varint(p, n, pos, &e->handle) < 0) {
    snprintf(why, why_size, "bad varint for the handle at byte %zd", start);
    return -1;
  }
  for (int i = 0; i < 3; ++i) {
    const Py_ssize_t at = *pos;
    if (meta_varint(p, n, pos, &e->fields[i]) < 0 ||
        e->fields[i] > UINT32_MAX) {
      snprintf(why, why_size, "bad %s at byte %zd (a uint32 varint)", names[i],
               at);
      return -1;
    }
    if (i == 1 && e->fields[1] >= (uint64_t)n_devices) {
      snprintf(why, why_size,
               "device %llu at byte %zd is not in Welcome.devices (%zd "
               "devices)",
               (unsigned long long)e->fields[1], at, n_devices);
      return -1;
    }
  }
  Py_ssize_t at = *pos;
  if (meta_varint(p, n, pos, &e->ndim) < 0) {
    snprintf(why, why_size, "bad varint for the count of dims at byte %zd",
             at);
    return -1;
  }
  if (e->ndim > (uint64_t)(n - *pos)) { /* every dim takes a byte or more */
    snprintf(why, why_size, "%llu dims at byte %zd, but only %zd bytes follow",
             (unsigned long long)e->ndim, at, n - *pos);
    return -1;
  }
  e->dims_at = *pos;
  for (uint64_t i = 0; i < e->ndim; ++i) {
    uint64_t d;
    at = *pos;
    if (meta_varint(p, n, pos, &d) < 0) {
      snprintf(why, why_size, "bad varint for dim #%llu at byte %zd",
               (unsigned long long)i, at);
      return -1;
    }
    if (d > (uint64_t)INT64_MAX) {
      snprintf(why, why_size,
               "dim #%llu of the entry at byte %zd is over 2^63 - 1",
               (unsigned long long)i, start);
      return -1;
    }
  }
  return 0;
}

/* The _Meta of a checked entry: what _meta_from_proto makes of the same
 * handle's TensorMeta. The Size and the _Meta are allocated with their
 * items to fill, as tuple.__new__(type, items) allocates them. */
static PyObject* meta_object(const unsigned char* p, Py_ssize_t n,
                             const PackedMeta* e, PyObject* devices) {
  PyObject* shape = size_type->tp_alloc(size_type, (Py_ssize_t)e->ndim);
  if (shape == NULL) return NULL;
  Py_ssize_t pos = e->dims_at;
  for (Py_ssize_t i = 0; i < (Py_ssize_t)e->ndim; ++i) {
    uint64_t d = 0;
    meta_varint(p, n, &pos, &d); /* checked by meta_entry */
    PyObject* dim = PyLong_FromLongLong((long long)d);
    if (dim == NULL) {
      Py_DECREF(shape);
      return NULL;
    }
    PyTuple_SET_ITEM(shape, i, dim);
  }
  PyObject* m = meta_type->tp_alloc(meta_type, 8);
  if (m == NULL) {
    Py_DECREF(shape);
    return NULL;
  }
  const uint64_t dtype = e->fields[0], flags = e->fields[2];
  PyObject* dt = dtype < (uint64_t)PyTuple_GET_SIZE(meta_dtypes)
                     ? PyTuple_GET_ITEM(meta_dtypes, dtype)
                     : Py_None;
  /* _Meta(shape, dtype, device, requires_grad, error, is_none, is_leaf,
   * grad_fn) */
  PyTuple_SET_ITEM(m, 0, shape);
  PyTuple_SET_ITEM(m, 1, Py_NewRef(dt));
  PyTuple_SET_ITEM(m, 2, Py_NewRef(PyTuple_GET_ITEM(devices, e->fields[1])));
  PyTuple_SET_ITEM(m, 3, PyBool_FromLong(flags & 1));
  PyTuple_SET_ITEM(m, 4, Py_NewRef(Py_None));
  PyTuple_SET_ITEM(m, 5, Py_NewRef(Py_False));
  PyTuple_SET_ITEM(m, 6, PyBool_FromLong(flags & 2));
  PyTuple_SET_ITEM(m, 7, Py_NewRef(meta_no_grad_fn));
  return m;
}

/* Takes `handle` out of `dropped`, else puts its _Meta into `meta`. */
static int meta_store(const unsigned char* p, Py_ssize_t n, const PackedMeta* e,
                      PyObject* devices, PyObject* dropped, PyObject* meta) {
  PyObject* key = PyLong_FromUnsignedLongLong(e->handle);
  if (key == NULL) return -1;
  int r = PySet_GET_SIZE(dropped) ? PySet_Discard(dropped, key) : 0;
  if (r == 0) {
    PyObject* m = meta_object(p, n, e, devices);
    r = m == NULL ? -1 : PyDict_SetItem(meta, key, m);
    Py_XDECREF(m);
  }
  Py_DECREF(key);
  return r < 0 ? -1 : 0;
}

/* store_packed(data, devices, dropped, meta) -> (count, low, high, why):
 * _packed_meta.store_packed_python in C. */
static PyObject* py_store_packed(PyObject* self, PyObject* const* args,
                                 Py_ssize_t nargs) {
  if (nargs != 4 || !PyBytes_Check(args[0]) || !PyTuple_Check(args[1]) ||
      !PySet_Check(args[2]) || !PyDict_Check(args[3])) {
    PyErr_SetString(PyExc_TypeError,
                    "store_packed(data: bytes, devices: tuple, dropped: set, "
                    "meta: dict)");
    return NULL;
  }
  if (meta_type == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "packed_meta_init() was not called");
    return NULL;
  }
  PyObject* devices = args[1];
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(devices); ++i) {
    if (!PyUnicode_Check(PyTuple_GET_ITEM(devices, i))) {
      PyErr_SetString(PyExc_TypeError, "store_packed: devices are str");
      return NULL;
    }
  }
  const unsigned char* p = (const unsigned char*)PyBytes_AS_STRING(args[0]);
  const Py_ssize_t n = PyBytes_GET_SIZE(args[0]);
  uint64_t count = 0, low = 0, high = 0;
  char why[160];
  int bad = 0;
  Py_ssize_t pos = 0;
  while (pos < n) {
    PackedMeta e;
    if (meta_entry(p, n, &pos, PyTuple_GET_SIZE(devices), &e, why,
                   sizeof(why)) < 0) {
      bad = 1;
      break;
    }
    if (count == 0 || e.handle < low) low = e.handle;
    if (e.handle > high) high = e.handle;
    ++count;
    if (meta_store(p, n, &e, devices, args[2], args[3]) < 0) return NULL;
  }
  if (!bad) return Py_BuildValue("(KKKO)", count, low, high, Py_None);
  return Py_BuildValue("(KKKs)", count, low, high, why);
}

/* packed_meta_init(_Meta, Size, DTYPES): turns store_packed on. */
static PyObject* py_packed_meta_init(PyObject* self, PyObject* args) {
  PyObject *meta, *size, *dtypes;
  if (!PyArg_ParseTuple(args, "O!O!O!", &PyType_Type, &meta, &PyType_Type,
                        &size, &PyTuple_Type, &dtypes)) {
    return NULL;
  }
  PyTypeObject* types[2] = {(PyTypeObject*)meta, (PyTypeObject*)size};
  for (int i = 0; i < 2; ++i) { /* made as tuple.__new__ would: no fields */
    if (!PyType_IsSubtype(types[i], &PyTuple_Type) ||
        types[i]->tp_basicsize != PyTuple_Type.tp_basicsize ||
        types[i]->tp_itemsize != PyTuple_Type.tp_itemsize) {
      PyErr_Format(PyExc_TypeError,
                   "packed_meta_init: %s is not a plain tuple subclass",
                   types[i]->tp_name);
      return NULL;
    }
  }
  if (meta_no_grad_fn == NULL &&
      (meta_no_grad_fn = PyUnicode_InternFromString("")) == NULL) {
    return NULL;
  }
  Py_INCREF(meta);
  Py_XSETREF(meta_type, (PyTypeObject*)meta);
  Py_INCREF(size);
  Py_XSETREF(size_type, (PyTypeObject*)size);
  Py_INCREF(dtypes);
  Py_XSETREF(meta_dtypes, dtypes);
  Py_RETURN_NONE;
}

#define SPEEDUPS_META_METHODS                                               \
  {"store_packed", (PyCFunction)(void (*)(void))py_store_packed,            \
   METH_FASTCALL,                                                           \
   "store_packed(data, devices, dropped, meta): the Ack.packed_created "    \
   "entries into meta (_packed_meta.store_packed_python)"},                 \
      {"packed_meta_init", py_packed_meta_init, METH_VARARGS,               \
       "packed_meta_init(_Meta, Size, DTYPES): the types store_packed makes"},

#endif /* TENSORD_PYTHON_SPEEDUPS_META_H_ */
