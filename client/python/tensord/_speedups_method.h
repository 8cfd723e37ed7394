/* The BinaryMethod type: a C method object wrapping its Python twin (the
 * `fallback`), as ``Tensor.__add__`` and the other binary operators and as
 * ``Tensor.__del__``; what it does when called is the `vectorcall` it is
 * made with (binary_vectorcall, del_vectorcall in _speedups.c). Here: its
 * fields, the object protocol (GC, descriptor, repr, ``__wrapped__``) and
 * new_method. Included by _speedups.c only, once.
 */
#ifndef TENSORD_PYTHON_SPEEDUPS_METHOD_H_
#define TENSORD_PYTHON_SPEEDUPS_METHOD_H_

#define PY_SSIZE_T_CLEAN
#include <Python.h>

typedef struct {
  PyObject_HEAD PyObject* name; /* the catalog op, "add" */
  PyObject* fallback;           /* the Python method: _tensor.binary_method's */
  PyObject* catalog;            /* the catalog the cached op came from */
  PyObject* op_id;
  PyObject* op_field;
  int plain;
  vectorcallfunc vectorcall;
} BinaryMethod;

static PyObject* binary_descr_get(PyObject* self, PyObject* obj,
                                  PyObject* type) {
  if (obj == NULL || obj == Py_None) return Py_NewRef(self);
  return PyMethod_New(self, obj);
}

static int binary_traverse(BinaryMethod* m, visitproc visit, void* arg) {
  Py_VISIT(m->name);
  Py_VISIT(m->fallback);
  Py_VISIT(m->catalog);
  Py_VISIT(m->op_id);
  Py_VISIT(m->op_field);
  return 0;
}

static int binary_clear(BinaryMethod* m) {
  Py_CLEAR(m->name);
  Py_CLEAR(m->fallback);
  Py_CLEAR(m->catalog);
  Py_CLEAR(m->op_id);
  Py_CLEAR(m->op_field);
  return 0;
}

static void binary_dealloc(BinaryMethod* m) {
  PyObject_GC_UnTrack(m);
  binary_clear(m);
  Py_TYPE(m)->tp_free((PyObject*)m);
}

static PyObject* binary_repr(BinaryMethod* m) {
  return PyUnicode_FromFormat("<tensord method %S (C)>", m->name);
}

static PyObject* binary_get_wrapped(BinaryMethod* m, void* closure) {
  return Py_NewRef(m->fallback);
}

static PyGetSetDef binary_getset[] = {
    {"__wrapped__", (getter)binary_get_wrapped, NULL,
     "the Python method this one speeds up", NULL},
    {NULL}};

static PyTypeObject BinaryMethodType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tensord._speedups.BinaryMethod",
    .tp_basicsize = sizeof(BinaryMethod),
    .tp_dealloc = (destructor)binary_dealloc,
    .tp_vectorcall_offset = offsetof(BinaryMethod, vectorcall),
    .tp_repr = (reprfunc)binary_repr,
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC |
                Py_TPFLAGS_METHOD_DESCRIPTOR | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_traverse = (traverseproc)binary_traverse,
    .tp_clear = (inquiry)binary_clear,
    .tp_getset = binary_getset,
    .tp_descr_get = binary_descr_get,
};

static PyObject* new_method(PyObject* name, PyObject* fallback,
                            vectorcallfunc call) {
  BinaryMethod* m = PyObject_GC_New(BinaryMethod, &BinaryMethodType);
  if (m == NULL) return NULL;
  m->name = Py_NewRef(name);
  m->fallback = Py_NewRef(fallback);
  m->catalog = m->op_id = m->op_field = NULL;
  m->plain = 0;
  m->vectorcall = call;
  PyObject_GC_Track(m);
  return (PyObject*)m;
}

#endif /* TENSORD_PYTHON_SPEEDUPS_METHOD_H_ */
