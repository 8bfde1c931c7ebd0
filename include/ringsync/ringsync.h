// Umbrella header: everything a trainer needs.
#pragma once

#include "ringsync/communicator.h"
#include "ringsync/errors.h"
#include "ringsync/gradient_averager.h"
#include "ringsync/mpi_environment.h"
#include "ringsync/options.h"
#include "ringsync/sharded_averager.h"
#include "ringsync/types.h"
#include "ringsync/version.h"
