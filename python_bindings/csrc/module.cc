// ringsync._ringsync: the compiled half of the `ringsync` package (ringsync/__init__.py re-exports it).
#include "bindings.h"

NB_MODULE(_ringsync, m) {
  using namespace ringsync::python;
  m.doc() = "ringsync: ring all-reduce for synchronous data-parallel training (compiled core)";
  registerErrors(m);
  registerTypes(m);
  registerOptions(m);
  registerMpiEnvironment(m);
  registerCommunicator(m);
  registerGradientAverager(m);
}
