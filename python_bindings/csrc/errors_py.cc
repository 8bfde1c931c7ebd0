// ringsync::Error and its subclasses as Python exceptions of the same names, rooted at
// ringsync.Error (a RuntimeError). InvalidArgument is also a ValueError, so generic
// `except ValueError` code keeps working.
#include <Python.h>

#include "bindings.h"
#include "ringsync/errors.h"

namespace ringsync::python {
namespace {

constexpr int kCodeCount = static_cast<int>(ErrorCode::kInternal) + 1;
// Owned by the module for the life of the process (exception types are never unloaded).
PyObject* gBaseError = nullptr;
PyObject* gErrorTypes[kCodeCount] = {};

PyObject* newException(nb::module_& m, const char* name, const char* doc, PyObject* bases) {
  const std::string qualified = std::string("ringsync.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  if (type == nullptr) throw nb::python_error();
  m.attr(name) = nb::handle(type);
  return type;
}

void setPythonError(const Error& error) {
  const int code = static_cast<int>(error.code());
  PyObject* type = (code >= 0 && code < kCodeCount && gErrorTypes[code]) ? gErrorTypes[code] : gBaseError;
  PyErr_SetString(type, error.what());
}

}  // namespace

void registerErrors(nb::module_& m) {
  gBaseError = newException(m, "Error", "Every failure ringsync reports (ringsync::Error).", PyExc_RuntimeError);
  nb::object invalidBases = nb::make_tuple(nb::handle(gBaseError), nb::handle(PyExc_ValueError));
  struct Entry {
    ErrorCode code;
    const char* doc;
    PyObject* bases;
  };
  const Entry entries[] = {
      {ErrorCode::kInvalidArgument, "Bad input; nothing was sent and no buffer was touched.", invalidBases.ptr()},
      {ErrorCode::kMismatch, "Ranks disagree about a collective (kind, count, type, op, root, order).", gBaseError},
      {ErrorCode::kTimeout, "A peer did not answer within RINGSYNC_TIMEOUT_SECONDS; the communicator is aborted.",
       gBaseError},
      {ErrorCode::kAborted, "The communicator failed earlier and refuses further calls.", gBaseError},
      {ErrorCode::kNonFinite, "RINGSYNC_CHECK_FINITE found NaN/Inf in some rank's input.", gBaseError},
      {ErrorCode::kBackend, "An MPI/CUDA/NCCL call failed, or a forced backend cannot serve the buffer.", gBaseError},
  };
  for (const Entry& e : entries)
    gErrorTypes[static_cast<int>(e.code)] = newException(m, errorCodeName(e.code), e.doc, e.bases);
  gErrorTypes[static_cast<int>(ErrorCode::kInternal)] = gBaseError;

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& error) {
      setPythonError(error);
    }
  });
}

}  // namespace ringsync::python
