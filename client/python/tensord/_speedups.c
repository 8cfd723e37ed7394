/* tensord._speedups: the Python client's per-op hot path in C.
 *
 * Optional: without it (no compiler or Python headers, or
 * TENSORD_PURE_PYTHON=1) the client runs the same path in Python
 * (_tensor.binary_method, Session.call), which stays the reference;
 * tests/python/test_speedups.py checks that both encode the same bytes and give
 * the same results.
 *
 * What is here:
 * - BinaryMethod: the type of ``Tensor.__add__`` and the other binary
 *   operators' methods. For two Tensors of one session whose op is a plain
 *   binary op it does what ``_tensor.binary_method``'s inlined path does
 *   (call site, Call entry, new Tensor) without a Python frame; everything
 *   else goes to the Python method it wraps.
 * - the same type, with another call, as ``Tensor.__del__``: a handle's
 *   release queued as ``_tensor.Tensor._release`` queues it.
 * - session_call: ``Session.call``'s common case (one output, an open
 *   session with nothing unusual pending), as a message or as an entry of
 *   the open packed run (Note [Python packed runs] in _call.py; the
 *   encodings are in _speedups_wire.h). It returns None whenever the Python
 *   method must run instead (a slow condition, a flush due, the flusher to
 *   wake, a call site to bind), before changing anything. It is in
 *   _speedups_call.h, which this file includes.
 * - the BinaryMethod type's object protocol is in _speedups_method.h.
 * - store_packed: an Ack's packed metas into _Meta objects (_speedups_meta.h).
 *
 * Note [GIL as the lock]: Session state is guarded by ``Session._lock``. The
 * C path never blocks: it runs only when that lock is free, and holds the
 * GIL from its first read of session state to its last write, without
 * calling Python code or allocating objects the garbage collector tracks in
 * between (a collection could run a ``Tensor.__del__``, which may take the
 * lock). A thread that takes the lock meanwhile cannot run Python code
 * before this one returns the GIL, so no critical section interleaves.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <structmember.h>

#include "_speedups_call.h" /* session_call, grad_state */

/* Set by init(): the Tensor class, its slots' offsets, (grad_state,) and
 * _site.site_field. Until then every call takes the Python path. */
static PyTypeObject* tensor_type;
static Py_ssize_t off_session, off_handle, off_hv, off_seq, off_info, off_dev,
    off_rg;
static PyObject* site_field;
static PyObject* site_fields; /* _site._fields: code -> {f_lasti: field} */
static PyObject* site_inside; /* _site._INSIDE: code inside the package */
static PyObject* one; /* the int 1: site_field(1) is the caller's frame */

static PyObject *s_catalog, *s_plain_binary, *s_op_field, *s_id, *s_call_python,
    *s_released, *s_append, *s_release;

#if PY_VERSION_HEX < 0x030A0000
static inline PyObject* Py_NewRef(PyObject* o) {
  Py_INCREF(o);
  return o;
}
#endif

#include "_speedups_meta.h" /* store_packed, packed_meta_init */

#define SLOT(obj, off) (*(PyObject**)((char*)(obj) + (off)))

/* The encoded call site of the frame running the operator (there is no
 * Python frame between it and this C method): _site.site_field's cache read
 * directly when the frame is outside the package and seen before, else
 * site_field(1), which walks up and fills the cache. */
static PyObject* caller_site(void) {
#if PY_VERSION_HEX >= 0x030B0000
  PyFrameObject* f = PyEval_GetFrame();
  if (f != NULL) {
    PyCodeObject* code = PyFrame_GetCode(f);
    PyObject* lines = PyDict_GetItemWithError(site_fields, (PyObject*)code);
    Py_DECREF(code);
    if (lines != NULL && lines != site_inside && PyDict_CheckExact(lines)) {
      PyObject* lasti = PyLong_FromLong(PyFrame_GetLasti(f));
      if (lasti == NULL) return NULL;
      PyObject* field = PyDict_GetItemWithError(lines, lasti);
      Py_DECREF(lasti);
      if (field != NULL && PyBytes_CheckExact(field)) return Py_NewRef(field);
    }
    if (PyErr_Occurred()) return NULL;
  }
#endif
  return PyObject_CallOneArg(site_field, one);
}

/* ------------------------------------------------------------ BinaryMethod */

#include "_speedups_method.h" /* the type, new_method */

/* The op for a session's catalog: cached for the catalog seen last. */
static int lookup_op_in(BinaryMethod* m, PyObject* catalog);

static int lookup_op(BinaryMethod* m, PyObject* session) {
  PyObject* d = PyObject_GenericGetDict(session, NULL);
  if (d == NULL) return -1;
  PyObject* catalog = PyDict_GetItemWithError(d, s_catalog);
  Py_XINCREF(catalog);
  Py_DECREF(d);
  if (catalog == NULL) return PyErr_Occurred() ? -1 : 0;
  const int r = catalog == m->catalog ? m->plain : lookup_op_in(m, catalog);
  Py_DECREF(catalog);
  return r;
}

static int lookup_op_in(BinaryMethod* m, PyObject* catalog) {
  if (!PyDict_CheckExact(catalog)) return 0;
  PyObject* op = PyDict_GetItemWithError(catalog, m->name);
  if (op == NULL) return PyErr_Occurred() ? -1 : 0;
  Py_INCREF(op);
  PyObject* plain = PyObject_GetAttr(op, s_plain_binary);
  PyObject* field = PyObject_GetAttr(op, s_op_field);
  PyObject* id = PyObject_GetAttr(op, s_id);
  Py_DECREF(op);
  if (plain == NULL || field == NULL || id == NULL || !PyBytes_Check(field)) {
    Py_XDECREF(plain);
    Py_XDECREF(field);
    Py_XDECREF(id);
    return PyErr_Occurred() ? -1 : 0;
  }
  Py_INCREF(catalog);
  Py_XSETREF(m->catalog, catalog);
  Py_XSETREF(m->op_field, field);
  Py_XSETREF(m->op_id, id);
  m->plain = plain == Py_True;
  Py_DECREF(plain);
  return m->plain;
}

static PyObject* binary_fast(BinaryMethod* m, PyObject* a, PyObject* b) {
  PyObject* s = SLOT(a, off_session);
  if (s == NULL || SLOT(b, off_session) != s) return Py_NotImplemented;
  const int plain = lookup_op(m, s); /* may run Python code: first */
  if (plain <= 0) return plain < 0 ? NULL : Py_NotImplemented;
  s = SLOT(a, off_session);
  PyObject *hv_a = SLOT(a, off_hv), *hv_b = SLOT(b, off_hv);
  if (s == NULL || SLOT(b, off_session) != s || hv_a == NULL || hv_b == NULL ||
      !PyBytes_CheckExact(hv_a) || !PyBytes_CheckExact(hv_b)) {
    return Py_NotImplemented;
  }
  /* dev = a._dev or b._dev, for the usual values (str, None) */
  PyObject* dev = SLOT(a, off_dev);
  PyObject* dev_b = SLOT(b, off_dev);
  if (dev == NULL || dev_b == NULL ||
      (dev != Py_None && !PyUnicode_CheckExact(dev)) ||
      (dev_b != Py_None && !PyUnicode_CheckExact(dev_b))) {
    return Py_NotImplemented;
  }
  if (dev == Py_None || PyUnicode_GET_LENGTH(dev) == 0) dev = dev_b;
  Py_INCREF(dev);
  Py_INCREF(s);
  PyObject* field = m->op_field; /* lookup_op's cache may change below */
  Py_INCREF(field);
  PyObject* site = NULL;
  PyObject* t = NULL;
  PyObject* r = NULL;
  /* The inputs before any Python code runs (it could rebind the slots). */
  PyObject* inputs = PyBytes_FromStringAndSize(
      NULL, PyBytes_GET_SIZE(hv_a) + PyBytes_GET_SIZE(hv_b));
  if (inputs == NULL) goto done;
  memcpy(PyBytes_AS_STRING(inputs), PyBytes_AS_STRING(hv_a),
         PyBytes_GET_SIZE(hv_a));
  memcpy(PyBytes_AS_STRING(inputs) + PyBytes_GET_SIZE(hv_a),
         PyBytes_AS_STRING(hv_b), PyBytes_GET_SIZE(hv_b));
  site = caller_site();
  if (site == NULL) goto done;
  if (!PyBytes_Check(site)) {
    PyErr_SetString(PyExc_TypeError, "site_field() returned no bytes");
    goto done;
  }
  /* The new Tensor first: its allocation may run a collection. */
  t = tensor_type->tp_alloc(tensor_type, 0);
  if (t == NULL) goto done;
  r = fast_call(s, inputs, site, field);
  if (r == Py_None) { /* the Python method, without trying C again */
    Py_DECREF(r);
    r = PyObject_CallMethodObjArgs(s, s_call_python, m->op_id, inputs, one,
                                   site, field, NULL);
  }
  if (r == NULL) goto done;
  if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 3) {
    PyErr_SetString(PyExc_SystemError, "Session.call returned no 3-tuple");
    goto done;
  }
  SLOT(t, off_session) = s;
  s = NULL;
  SLOT(t, off_handle) = Py_NewRef(PyTuple_GET_ITEM(r, 0));
  SLOT(t, off_seq) = Py_NewRef(PyTuple_GET_ITEM(r, 1));
  SLOT(t, off_hv) = Py_NewRef(PyTuple_GET_ITEM(r, 2));
  SLOT(t, off_info) = Py_NewRef(Py_None);
  SLOT(t, off_dev) = dev;
  dev = NULL;
  SLOT(t, off_rg) = Py_NewRef(Py_None);
  Py_DECREF(r);
  r = t;
  t = NULL;
done:
  if (t != NULL && r != NULL) { /* a failed call: drop the unfilled Tensor */
    Py_DECREF(r);
    r = NULL;
  }
  Py_XDECREF(t);
  Py_XDECREF(s);
  Py_XDECREF(dev);
  Py_XDECREF(field);
  Py_XDECREF(site);
  Py_XDECREF(inputs);
  return r;
}

static PyObject* binary_vectorcall(PyObject* self, PyObject* const* args,
                                   size_t nargsf, PyObject* kwnames) {
  BinaryMethod* m = (BinaryMethod*)self;
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (tensor_type != NULL && nargs == 2 && kwnames == NULL &&
      PyObject_TypeCheck(args[0], tensor_type) &&
      PyObject_TypeCheck(args[1], tensor_type)) {
    PyObject* r = binary_fast(m, args[0], args[1]);
    if (r != Py_NotImplemented) return r;
  }
  return PyObject_Vectorcall(m->fallback, args, nargsf, kwnames);
}

/* Tensor.__del__ (``_tensor.Tensor._release`` in C): onto ``_released``
 * while a batch is open (its flush drains them), else Session.release.
 * Errors are dropped, as the Python method drops them (interpreter
 * shutdown, a Tensor never filled in). */
static PyObject* del_vectorcall(PyObject* self, PyObject* const* args,
                                size_t nargsf, PyObject* kwnames) {
  BinaryMethod* m = (BinaryMethod*)self;
  if (tensor_type == NULL || PyVectorcall_NARGS(nargsf) != 1 ||
      kwnames != NULL || !PyObject_TypeCheck(args[0], tensor_type)) {
    return PyObject_Vectorcall(m->fallback, args, nargsf, kwnames);
  }
  PyObject* s = SLOT(args[0], off_session);
  PyObject* h = SLOT(args[0], off_handle);
  if (s == NULL || h == NULL) Py_RETURN_NONE;
  Py_INCREF(s);
  Py_INCREF(h);
  PyObject* r = NULL;
  PyObject* d = PyObject_GenericGetDict(s, NULL);
  if (d != NULL) {
    PyObject* entries = PyDict_GetItemWithError(d, s_entries);
    const int open = entries != NULL ? PyObject_IsTrue(entries) : -1;
    PyObject* released =
        open > 0 ? PyDict_GetItemWithError(d, s_released) : NULL;
    Py_XINCREF(released);
    Py_DECREF(d);
    if (released != NULL) {
      r = PyObject_CallMethodOneArg(released, s_append, h);
      Py_DECREF(released);
    } else if (open == 0) {
      r = PyObject_CallMethodOneArg(s, s_release, h);
    }
  }
  if (r == NULL) {
    PyErr_Clear();
  } else {
    Py_DECREF(r);
  }
  Py_DECREF(s);
  Py_DECREF(h);
  Py_RETURN_NONE;
}

/* binary_method(name, fallback) -> BinaryMethod */
static PyObject* py_binary_method(PyObject* self, PyObject* args) {
  PyObject *name, *fallback;
  if (!PyArg_ParseTuple(args, "UO", &name, &fallback)) return NULL;
  return new_method(name, fallback, binary_vectorcall);
}

/* finalizer(fallback) -> the C Tensor.__del__ */
static PyObject* py_finalizer(PyObject* self, PyObject* fallback) {
  PyObject* name = PyUnicode_FromString("__del__");
  if (name == NULL) return NULL;
  PyObject* m = new_method(name, fallback, del_vectorcall);
  Py_DECREF(name);
  return m;
}

/* ------------------------------------------------------------------- init */

static int slot_offset(PyTypeObject* type, const char* name, Py_ssize_t* off) {
  /* A __slots__ entry is a member descriptor somewhere on the MRO. */
  PyObject* key = PyUnicode_InternFromString(name);
  if (key == NULL) return -1;
  PyObject* d = _PyType_Lookup(type, key);
  Py_DECREF(key);
  if (d == NULL || !PyObject_TypeCheck(d, &PyMemberDescr_Type)) {
    PyErr_Format(PyExc_TypeError, "%s has no slot %s", type->tp_name, name);
    return -1;
  }
  PyMemberDef* def = ((PyMemberDescrObject*)d)->d_member;
  if (def->type != T_OBJECT_EX) {
    PyErr_Format(PyExc_TypeError, "%s.%s is not an object slot", type->tp_name,
                 name);
    return -1;
  }
  *off = def->offset;
  return 0;
}

/* init(Tensor, grad_state, site_field, site_fields, site_inside): turns
 * the C paths on. */
static PyObject* py_init(PyObject* self, PyObject* args) {
  PyObject *type, *state, *site, *fields, *inside;
  if (!PyArg_ParseTuple(args, "O!OOO!O", &PyType_Type, &type, &state, &site,
                        &PyDict_Type, &fields, &inside)) {
    return NULL;
  }
  PyTypeObject* t = (PyTypeObject*)type;
  if (slot_offset(t, "_session", &off_session) < 0 ||
      slot_offset(t, "_handle", &off_handle) < 0 ||
      slot_offset(t, "_hv", &off_hv) < 0 ||
      slot_offset(t, "_seq", &off_seq) < 0 ||
      slot_offset(t, "_info", &off_info) < 0 ||
      slot_offset(t, "_dev", &off_dev) < 0 ||
      slot_offset(t, "_rg", &off_rg) < 0) {
    return NULL;
  }
  Py_INCREF(type);
  Py_XSETREF(tensor_type, t);
  Py_INCREF(state);
  Py_XSETREF(grad_state, state);
  Py_INCREF(site);
  Py_XSETREF(site_field, site);
  Py_INCREF(fields);
  Py_XSETREF(site_fields, fields);
  Py_INCREF(inside);
  Py_XSETREF(site_inside, inside);
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"init", py_init, METH_VARARGS,
     "init(Tensor, grad_state, site_field, site_fields, site_inside): turn the "
     "C paths on"},
    {"binary_method", py_binary_method, METH_VARARGS,
     "binary_method(name, fallback): the C operator method of op `name`"},
    {"finalizer", py_finalizer, METH_O,
     "finalizer(fallback): the C Tensor.__del__ (fallback: its Python twin)"},
    {"session_call", (PyCFunction)(void (*)(void))py_session_call,
     METH_FASTCALL,
     "session_call(session, inputs, site_field, op_part): Session.call's "
     "common case, or None"},
    {"call_entry", py_call_entry, METH_VARARGS,
     "call_entry(seq, op_part, inputs, first, site_field): one Call entry"},
    {"run_call", py_run_call, METH_VARARGS,
     "run_call(op_part, site_varint, inputs, first): a packed run's Call entry "
     "(None: op_part has attributes)"},
    {"run_release", py_run_release, METH_O,
     "run_release(handles: list): a packed run's Release entry"},
    {"run_entry", py_run_entry, METH_VARARGS,
     "run_entry(seq, count, entries): a packed run's Batch.commands entry"},
    SPEEDUPS_META_METHODS
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_speedups",
                                    "tensord's per-op hot path in C", -1,
                                    methods};

#define INTERN(var, text)                                 \
  if ((var = PyUnicode_InternFromString(text)) == NULL) { \
    return NULL;                                          \
  }

PyMODINIT_FUNC PyInit__speedups(void) {
  if (PyType_Ready(&BinaryMethodType) < 0) return NULL;
  if (intern_call_names() < 0) return NULL;
  INTERN(s_catalog, "catalog");
  INTERN(s_plain_binary, "plain_binary");
  INTERN(s_op_field, "op_field");
  INTERN(s_id, "id");
  INTERN(s_call_python, "_call_python");
  INTERN(s_released, "_released");
  INTERN(s_append, "append");
  INTERN(s_release, "release");
  if ((one = PyLong_FromLong(1)) == NULL) return NULL;
  return PyModule_Create(&module);
}
