// A ringsync.Options (a nanobind object of the _ringsync module) as this module's ringsync::Options.
// The two extensions each hold their own copy of libringsync, so the struct cannot be shared;
// its fields are read through their Python names.
#pragma once

#include <pybind11/pybind11.h>

#include "ringsync/options.h"

namespace ringsync::torch_backend {

Options optionsFromPython(pybind11::handle options);  // InvalidArgument naming a bad field

}  // namespace ringsync::torch_backend
