#include "errors.h"

#include <pythread.h>

#include <string>

namespace ccpy {
namespace {

thread_local CallScope* tl_scope = nullptr;
unsigned long main_thread_ident = 0;

// clustercomm._errors.CLASSES: ErrorKind name -> class (looked up at the first error; never
// freed, so nothing is released after the interpreter is gone).
nb::object class_for(cc::comm::ErrorKind kind) {
  static nb::object* classes =
      new nb::object(nb::module_::import_("clustercomm._errors").attr("CLASSES"));
  return (*classes)[nb::str(cc::comm::to_string(kind))];
}

// Python 3.12 replaced PyErr_Fetch/Restore with one object.
PyObject* fetch_error() {
#if PY_VERSION_HEX >= 0x030C0000
  return PyErr_GetRaisedException();
#else
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (tb != nullptr) PyException_SetTraceback(value, tb);
  Py_XDECREF(type);
  Py_XDECREF(tb);
  return value;
#endif
}

void restore_error(PyObject* value) {  // steals `value`
#if PY_VERSION_HEX >= 0x030C0000
  PyErr_SetRaisedException(value);
#else
  PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(value));
  Py_INCREF(type);
  PyErr_Restore(type, value, PyException_GetTraceback(value));
#endif
}

}  // namespace

void raise_comm_error(const cc::comm::Error& e) {
  nb::object cls = class_for(e.kind());
  nb::list ranks;
  for (int r : e.ranks()) ranks.append(r);
  nb::object exc = cls(nb::str(e.message().c_str()), nb::tuple(ranks));
  PyErr_SetObject(cls.ptr(), exc.ptr());
  throw nb::python_error();
}

void init_main_thread() {
  main_thread_ident = nb::cast<unsigned long>(
      nb::module_::import_("threading").attr("main_thread")().attr("ident"));
}

CallScope::CallScope() : outer_(tl_scope) {
  check_signals = PyThread_get_thread_ident() == main_thread_ident;
  tl_scope = this;
}

CallScope::~CallScope() {
  tl_scope = outer_;
  if (pending != nullptr) {
    nb::gil_scoped_acquire gil;  // a scope may end while the GIL is released
    Py_DECREF(pending);
  }
}

void CallScope::rethrow(const cc::comm::Error& e) {
  if (pending != nullptr) {
    PyObject* p = pending;
    pending = nullptr;
    restore_error(p);
    throw nb::python_error();
  }
  raise_comm_error(e);
}

bool interrupt_check() {
  CallScope* s = tl_scope;
  if (s == nullptr || !s->check_signals || s->pending != nullptr) return s && s->pending;
  nb::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() == 0) return false;
  s->pending = fetch_error();
  return true;
}

}  // namespace ccpy
