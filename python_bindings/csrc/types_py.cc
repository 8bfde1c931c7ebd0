// The element types and reduction operators ringsync understands, and the build's version.
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "ringsync/types.h"
#include "ringsync/version.h"

namespace ringsync::python {

void registerTypes(nb::module_& m) {
  nb::list dtypes;
  for (DataType type : kAllDataTypes) dtypes.append(dataTypeName(type));
  nb::list ops;
  for (ReduceOp op : kAllReduceOps) ops.append(reduceOpName(op));
  m.attr("dtypes") = nb::tuple(dtypes);
  m.attr("ops") = nb::tuple(ops);
  m.attr("__version__") = RINGSYNC_VERSION_STRING;
  m.attr("with_cuda") = static_cast<bool>(RINGSYNC_WITH_CUDA);
}

}  // namespace ringsync::python
