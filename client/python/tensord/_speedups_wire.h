/* The encodings tensord._speedups writes: the C twins of _wire.py's Call
 * entry, packed-run Call entry and run (Note [Python packed runs] in
 * _call.py; proto/packed_commands.h has the entry format). Pure functions on
 * bytes; included by _speedups.c only. tests/python/test_speedups.py checks
 * each against _wire.py.
 */
#ifndef TENSORD_PYTHON_SPEEDUPS_WIRE_H_
#define TENSORD_PYTHON_SPEEDUPS_WIRE_H_

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static int varint_len(uint64_t v) {
  int n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

static char* put_varint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = (char)((v & 0x7F) | 0x80);
    v >>= 7;
  }
  *p++ = (char)v;
  return p;
}

/* How many varints the packed field payload `p[0..n)` holds. */
static Py_ssize_t value_count(const char* p, Py_ssize_t n) {
  Py_ssize_t count = 0;
  for (Py_ssize_t i = 0; i < n; ++i) count += (p[i] & 0x80) == 0;
  return count;
}

/* The Call entry of one command in the open batch (Batch.commands):
 * Command{seq, call: {op_part, inputs (packed), outputs = [first] (packed),
 * site}} as _wire.call_entry_packed writes it. */
static PyObject* call_entry(uint64_t seq, const char* op_part, Py_ssize_t n_op,
                            const char* inputs, Py_ssize_t n_in, uint64_t first,
                            const char* site, Py_ssize_t n_site) {
  const int n_out = varint_len(first);
  const uint64_t body = (uint64_t)n_op + 1 + varint_len(n_in) + n_in + 1 +
                        varint_len(n_out) + n_out + n_site;
  const uint64_t cmd = 1 + varint_len(seq) + 1 + varint_len(body) + body;
  const Py_ssize_t total = (Py_ssize_t)(1 + varint_len(cmd) + cmd);
  PyObject* out = PyBytes_FromStringAndSize(NULL, total);
  if (out == NULL) return NULL;
  char* p = PyBytes_AS_STRING(out);
  *p++ = 0x0a;
  p = put_varint(p, cmd);
  *p++ = 0x08;
  p = put_varint(p, seq);
  *p++ = 0x12;
  p = put_varint(p, body);
  memcpy(p, op_part, n_op);
  p += n_op;
  *p++ = 0x12;
  p = put_varint(p, (uint64_t)n_in);
  memcpy(p, inputs, n_in);
  p += n_in;
  *p++ = 0x22;
  p = put_varint(p, (uint64_t)n_out);
  p = put_varint(p, first);
  memcpy(p, site, n_site);
  return out;
}

/* The op id's varint in `op_part` (_wire.op_fields: the Call.op_id field,
 * then any attributes): its length, or 0 when attributes follow it or the
 * field is not there. The varint starts at op_part + 1. */
static Py_ssize_t op_varint_len(const char* op_part, Py_ssize_t n_op) {
  if (n_op < 2 || op_part[0] != 0x08) return 0;
  Py_ssize_t i = 1;
  while (i < n_op && (op_part[i] & 0x80)) ++i;
  return i == n_op - 1 ? n_op - 1 : 0;
}

/* Bytes of a run's Call entry with one output (run_call_write). */
static Py_ssize_t run_call_len(Py_ssize_t n_op_v, Py_ssize_t n_site_v,
                               const char* inputs, Py_ssize_t n_in,
                               uint64_t first) {
  return 1 + n_op_v + n_site_v + varint_len(value_count(inputs, n_in)) + n_in +
         1 + varint_len(first);
}

/* Writes a run's Call entry `1, op_id, site_id, n, n inputs, 1, first` (as
 * _wire.run_call) at `p` from the op and site ids' varints and the packed
 * inputs; returns the byte after it. */
static char* run_call_write(char* p, const char* op_v, Py_ssize_t n_op_v,
                            const char* site_v, Py_ssize_t n_site_v,
                            const char* inputs, Py_ssize_t n_in,
                            uint64_t first) {
  *p++ = 0x01;
  memcpy(p, op_v, n_op_v);
  p += n_op_v;
  memcpy(p, site_v, n_site_v);
  p += n_site_v;
  p = put_varint(p, (uint64_t)value_count(inputs, n_in));
  memcpy(p, inputs, n_in);
  p += n_in;
  *p++ = 0x01;
  return put_varint(p, first);
}

/* The Batch.commands entry of Command{seq, packed{count, entries}} (as
 * _wire.run_entry). */
static PyObject* run_entry(uint64_t seq, uint64_t count, const char* entries,
                           Py_ssize_t n) {
  const uint64_t run = 1 + varint_len(count) + 1 + varint_len(n) + n;
  const uint64_t cmd = 1 + varint_len(seq) + 2 + varint_len(run) + run;
  PyObject* out =
      PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(1 + varint_len(cmd) + cmd));
  if (out == NULL) return NULL;
  char* p = PyBytes_AS_STRING(out);
  *p++ = 0x0a;
  p = put_varint(p, cmd);
  *p++ = 0x08;
  p = put_varint(p, seq);
  *p++ = (char)0x82; /* field 16, length-delimited */
  *p++ = 0x01;
  p = put_varint(p, run);
  *p++ = 0x08;
  p = put_varint(p, count);
  *p++ = 0x12;
  p = put_varint(p, (uint64_t)n);
  memcpy(p, entries, n);
  return out;
}

/* ------------------------------------------------------- module functions */

static PyObject* varint_bytes(uint64_t v) {
  char buf[10];
  return PyBytes_FromStringAndSize(buf, put_varint(buf, v) - buf);
}

/* call_entry(seq, op_part, inputs, first, site_field) -> bytes: for tests. */
static PyObject* py_call_entry(PyObject* self, PyObject* args) {
  unsigned long long seq, first;
  const char *op, *in, *site;
  Py_ssize_t n_op, n_in, n_site;
  if (!PyArg_ParseTuple(args, "Ky#y#Ky#", &seq, &op, &n_op, &in, &n_in, &first,
                        &site, &n_site)) {
    return NULL;
  }
  return call_entry(seq, op, n_op, in, n_in, first, site, n_site);
}

/* run_call(op_part, site_varint, inputs, first) -> bytes: for tests (None:
 * op_part has attributes). */
static PyObject* py_run_call(PyObject* self, PyObject* args) {
  unsigned long long first;
  const char *op, *site, *in;
  Py_ssize_t n_op, n_site, n_in;
  if (!PyArg_ParseTuple(args, "y#y#y#K", &op, &n_op, &site, &n_site, &in, &n_in,
                        &first)) {
    return NULL;
  }
  const Py_ssize_t n_op_v = op_varint_len(op, n_op);
  if (n_op_v == 0) Py_RETURN_NONE;
  const Py_ssize_t len = run_call_len(n_op_v, n_site, in, n_in, first);
  PyObject* out = PyBytes_FromStringAndSize(NULL, len);
  if (out == NULL) return NULL;
  run_call_write(PyBytes_AS_STRING(out), op + 1, n_op_v, site, n_site, in, n_in,
                 first);
  return out;
}

/* run_release(handles: list) -> bytes: a packed run's Release entry, as
 * _wire.run_release writes it (with the handles' varints in C: a batch
 * releases about as many handles as it ran ops). */
static PyObject* py_run_release(PyObject* self, PyObject* handles) {
  if (!PyList_CheckExact(handles)) {
    PyErr_SetString(PyExc_TypeError, "run_release(handles: list)");
    return NULL;
  }
  const Py_ssize_t n = PyList_GET_SIZE(handles);
  Py_ssize_t size = 1 + varint_len((uint64_t)n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    const uint64_t h = PyLong_AsUnsignedLongLong(PyList_GET_ITEM(handles, i));
    if (h == (uint64_t)-1 && PyErr_Occurred()) return NULL;
    size += varint_len(h);
  }
  PyObject* out = PyBytes_FromStringAndSize(NULL, size);
  if (out == NULL) return NULL;
  char* p = PyBytes_AS_STRING(out);
  *p++ = 0x02;
  p = put_varint(p, (uint64_t)n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    p = put_varint(p, PyLong_AsUnsignedLongLong(PyList_GET_ITEM(handles, i)));
  }
  return out;
}

/* run_entry(seq, count, entries) -> bytes: for tests. */
static PyObject* py_run_entry(PyObject* self, PyObject* args) {
  unsigned long long seq, count;
  const char* entries;
  Py_ssize_t n;
  if (!PyArg_ParseTuple(args, "KKy#", &seq, &count, &entries, &n)) return NULL;
  return run_entry(seq, count, entries, n);
}

#endif /* TENSORD_PYTHON_SPEEDUPS_WIRE_H_ */
