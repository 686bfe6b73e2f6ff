// MPI's C API alone. Some MPI builds (Debian's OpenMPI) otherwise bring their C++ bindings into
// every C++ file that includes mpi.h, and those need -lmpi_cxx, which the Makefile does not link.
#ifndef HCCL_TEST_MPI_C_H_
#define HCCL_TEST_MPI_C_H_
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include "mpi.h"
#endif  // HCCL_TEST_MPI_C_H_
