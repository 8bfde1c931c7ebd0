// Several communicators recording one timeline (RINGSYNC_TIMELINE, set by the caller): every
// communicator's calls must end up in the one file, labelled by world rank, whatever the order in
// which the communicators are made and destroyed and whichever ranks record.
//   timeline_communicators exclude0    the world, then the ranks but world rank 0; the world
//                                      communicator is destroyed first (torch's shutdown_all
//                                      ends groups in creation order)
//   timeline_communicators subfirst    the ranks but world rank 0 first, then the world
//   timeline_communicators sequential  one world communicator after another, then the even ranks
//   timeline_communicators some        the odd world ranks do not record (the variable unset there)
//   timeline_communicators some0       world rank 0 does not record
// Every rank writes <timeline>.expected.<world rank>: one "<calls> <kind> <world ranks>" line per
// communicator it recorded on, for check_communicators.py.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "ringsync/ringsync.h"

using namespace ringsync;

namespace {

int worldRank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

// The world ranks `keep` selects, as an MPI communicator (MPI_COMM_NULL on the others).
template <typename Keep> MPI_Comm worldRanksWhere(Keep keep) {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, keep(worldRank()) ? 0 : MPI_UNDEFINED, worldRank(), &comm);
  return comm;
}

class Notes {
 public:
  Notes(const std::string& path, bool recording)
      : file_(recording ? std::fopen((path + ".expected." + std::to_string(worldRank())).c_str(), "w") : nullptr) {}
  ~Notes() {
    if (file_) std::fclose(file_);
  }
  // `calls` calls of `kind` on `comm` (the world ranks it holds, in its rank order). Collective.
  void note(Communicator& comm, int calls, const char* kind) {
    std::vector<int> ranks(static_cast<std::size_t>(comm.size()));
    const int mine = worldRank();
    MPI_Allgather(&mine, 1, MPI_INT, ranks.data(), 1, MPI_INT, comm.mpiComm());
    if (!file_) return;
    std::fprintf(file_, "%d %s", calls, kind);
    for (std::size_t i = 0; i < ranks.size(); ++i) std::fprintf(file_, "%s%d", i ? "," : " ", ranks[i]);
    std::fprintf(file_, "\n");
  }

 private:
  std::FILE* file_;
};

void allreduces(Communicator& comm, int calls, Notes& notes) {
  std::vector<float> data(1000, 1.0f);
  for (int i = 0; i < calls; ++i)
    comm.allreduce(data.data(), data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum);
  notes.note(comm, calls, "allreduce");
}

void barriers(Communicator& comm, int calls, Notes& notes) {
  for (int i = 0; i < calls; ++i) comm.barrier();
  notes.note(comm, calls, "barrier");
}

}  // namespace

int main(int argc, char** argv) {
  MpiEnvironment mpi(&argc, &argv);
  const std::string mode = argc > 1 ? argv[1] : "exclude0";
  Options options = Options::fromEnvironment();
  const std::string path = options.timelinePath;
  if ((mode == "some" && worldRank() % 2 == 1) || (mode == "some0" && worldRank() == 0)) options.timelinePath.clear();
  Notes notes(path, !options.timelinePath.empty());
  auto butRankZero = [](int rank) { return rank != 0; };
  MPI_Comm sub = worldRanksWhere(butRankZero);
  if (mode == "exclude0" || mode == "some" || mode == "some0") {
    auto world = std::make_unique<Communicator>(MPI_COMM_WORLD, options);
    std::unique_ptr<Communicator> part;
    if (sub != MPI_COMM_NULL) part = std::make_unique<Communicator>(sub, options);
    allreduces(*world, 3, notes);
    if (part) barriers(*part, 4, notes);
    world.reset();  // the world communicator ends first
    if (part) allreduces(*part, 2, notes);
  } else if (mode == "subfirst") {
    std::unique_ptr<Communicator> part;
    if (sub != MPI_COMM_NULL) part = std::make_unique<Communicator>(sub, options);
    Communicator world(MPI_COMM_WORLD, options);
    if (part) barriers(*part, 4, notes);
    allreduces(world, 3, notes);
  } else if (mode == "sequential") {
    for (int calls : {2, 3}) {
      Communicator world(MPI_COMM_WORLD, options);
      allreduces(world, calls, notes);
    }
    MPI_Comm even = worldRanksWhere([](int rank) { return rank % 2 == 0; });
    if (even != MPI_COMM_NULL) {
      {
        Communicator comm(even, options);
        barriers(comm, 5, notes);
      }
      MPI_Comm_free(&even);
    }
  } else {
    std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
    return 2;
  }
  if (sub != MPI_COMM_NULL) MPI_Comm_free(&sub);
  return 0;
}
