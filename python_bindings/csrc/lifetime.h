// Python may keep ringsync objects alive until after MPI_Finalize (module globals are cleared after
// atexit handlers run). Objects that own MPI resources register here, and finalize() releases them,
// newest first, before MPI is finalised; afterwards they raise instead of touching MPI.
#pragma once

namespace ringsync::python {

class MpiResource {
 public:
  MpiResource();           // registers this object
  virtual ~MpiResource();  // unregisters it
  MpiResource(const MpiResource&) = delete;
  MpiResource& operator=(const MpiResource&) = delete;

  // Frees the object's MPI resources now (collective ones included). Never throws.
  virtual void releaseMpi() noexcept = 0;
};

// Releases every registered object, newest first (an averager before the communicator it was made from).
void releaseAllMpiResources() noexcept;

}  // namespace ringsync::python
