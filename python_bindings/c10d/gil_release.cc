#include "gil_release.h"

#include <Python.h>

namespace ringsync::torch_backend {

void withoutGil(const std::function<void()>& wait) {
  if (!Py_IsInitialized() || !PyGILState_Check()) {
    wait();
    return;
  }
  PyThreadState* saved = PyEval_SaveThread();
  try {
    wait();
  } catch (...) {
    PyEval_RestoreThread(saved);
    throw;
  }
  PyEval_RestoreThread(saved);
}

}  // namespace ringsync::torch_backend
