// Input values, expected results and comparisons, with hccl_test's conventions:
//  - every element of a buffer holds one small integer v written in the buffer's dtype
//    (int8-sized types hold v % 128; fp16 the IEEE half of v; bfp16 the integer v itself as
//    the 16-bit pattern, a subnormal, which is what hccl_test writes for bfp16);
//  - a reduction of v over n ranks is expected as: sum v*n, prod v^n, max/min v
//    (int8-sized sums and products are capped at 127);
//  - floats compare with a relative tolerance, everything else bit for bit;
//  - a dtype the op has no comparison for counts as one error ("no match datatype").
#ifndef HCCL_TEST_VALUES_H_
#define HCCL_TEST_VALUES_H_

#include <stdint.h>

namespace hccl_test {

// Bytes per element as hccl_test counts them (int128 and unknown types: 4).
int DtypeBytes(int dtype);
// Name accepted by -d for a dtype, or "unknown".
const char* DtypeName(int dtype);
// -d NAME -> dtype, -1 when unknown.
int DtypeFromName(const char* name);
// -o NAME -> reduce op, -1 when unknown.
int ReduceOpFromName(const char* name);

// Writes v into n elements; false when hccl_test has no writer for the dtype (nothing written).
bool FillValue(void* dst, uint64_t n, int dtype, int v);
// Writes the expected reduction of v over nranks ranks; false when the dtype has no reference.
bool FillReduced(void* dst, uint64_t n, int dtype, int op, int v, int nranks);

// Whether hccl_test skips a reduction's check because its expected value would not be exact in
// the dtype. `per_block`: the inputs grow with the rank count too (reduce_scatter(v): block i
// holds i+1), so the sum limit is the square root of the type's exact range.
bool ReductionCheckOverflows(int dtype, int op, int nranks, bool per_block);
// The same for copied data: int8-sized values stop fitting at 128 ranks.
bool CopyCheckOverflows(int dtype, int nranks);

// How a result is compared.
enum CompareKind { kNoCompare, kFloat, kByte, kHalf, kWord, kLong, kULong };
// The comparison reduction results get (all_reduce, reduce, reduce_scatter); reduce_scatterv
// has none for uint64 and fp64, hence the flag.
CompareKind ReductionCompare(int dtype, bool with_uint64_fp64);
// The comparison copied data gets (all_gather(v), broadcast, scatter).
CompareKind CopyCompare(int dtype);
// Wrong elements of got against want (n elements); verbose >= 2 prints the first one.
int Compare(CompareKind kind, const void* got, const void* want, uint64_t n, int verbose);

// alltoallv/alltoallvc: block i (counts[i] elements at displs[i]) must hold i+1 everywhere.
// Returns the number of wrong blocks; 0 for a dtype without a writer (not checked).
int CheckBlocksByRank(const void* buf, const uint64_t* counts, const uint64_t* displs, int nranks,
                      int dtype, int rank, int verbose);

// alltoall: the send buffer repeats an 8-byte pattern; every block this rank receives must be
// the slice of that pattern its sender kept for it.
void FillPattern(void* dst, uint64_t bytes);
bool CheckPattern(const void* buf, uint64_t bytes, int nranks, int rank);

}  // namespace hccl_test

#endif  // HCCL_TEST_VALUES_H_
