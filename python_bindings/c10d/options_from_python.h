// A ringsync.Options (a nanobind object of the _ringsync module) as this module's ringsync::Options.
// The object belongs to _ringsync, a nanobind module, and this module is pybind11 (torch's): the two
// binding libraries cannot hand each other the C++ struct, so its fields are read by their Python names.
#pragma once

#include <pybind11/pybind11.h>

#include "ringsync/options.h"

namespace ringsync::torch_backend {

Options optionsFromPython(pybind11::handle options);  // InvalidArgument naming a bad field

}  // namespace ringsync::torch_backend
