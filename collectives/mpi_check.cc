#include "mpi_check.h"

namespace ringsync::detail {

std::string mpiErrorString(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(length));
}

void throwMpiError(const char* call, const char* file, int line, int code) {
  throw BackendError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                     mpiErrorString(code));
}

}  // namespace ringsync::detail
