// The extension's registration functions: one per public header of ringsync (MSCCL++'s
// python/csrc layout), called in this order by module.cc.
#pragma once

#include <nanobind/nanobind.h>

namespace ringsync::python {

namespace nb = nanobind;

void registerErrors(nb::module_& m);            // errors.h: the exception family
void registerTypes(nb::module_& m);             // types.h and version.h
void registerOptions(nb::module_& m);           // options.h: ringsync.Options
void registerMpiEnvironment(nb::module_& m);    // mpi_environment.h: init on demand, finalize at exit
void registerCommunicator(nb::module_& m);      // communicator.h: ringsync.Communicator
void registerGradientAverager(nb::module_& m);  // gradient_averager.h: ringsync.GradientAverager

}  // namespace ringsync::python
