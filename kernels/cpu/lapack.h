// The Fortran LAPACK routines tensord calls, as libopenblas exports them
// (no lapacke.h is installed). Column-major, LP64 (32-bit integers: the
// Debian libopenblas build; the 64-bit one is libopenblas64). Character
// arguments carry gfortran's hidden trailing length; OpenBLAS's own C
// implementations (getrf, getrs, potrf) ignore it, which the x86-64 and
// AArch64 calling conventions allow.
#ifndef TENSORD_KERNELS_CPU_LAPACK_H_
#define TENSORD_KERNELS_CPU_LAPACK_H_

#include <cstddef>

extern "C" {
void sgetrf_(const int* m, const int* n, float* a, const int* lda, int* ipiv,
             int* info);
void dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv,
             int* info);
void sgetrs_(const char* trans, const int* n, const int* nrhs, const float* a,
             const int* lda, const int* ipiv, float* b, const int* ldb,
             int* info, size_t trans_len);
void dgetrs_(const char* trans, const int* n, const int* nrhs, const double* a,
             const int* lda, const int* ipiv, double* b, const int* ldb,
             int* info, size_t trans_len);
void spotrf_(const char* uplo, const int* n, float* a, const int* lda,
             int* info, size_t uplo_len);
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda,
             int* info, size_t uplo_len);
void ssyevd_(const char* jobz, const char* uplo, const int* n, float* a,
             const int* lda, float* w, float* work, const int* lwork,
             int* iwork, const int* liwork, int* info, size_t jobz_len,
             size_t uplo_len);
void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a,
             const int* lda, double* w, double* work, const int* lwork,
             int* iwork, const int* liwork, int* info, size_t jobz_len,
             size_t uplo_len);
void sgesdd_(const char* jobz, const int* m, const int* n, float* a,
             const int* lda, float* s, float* u, const int* ldu, float* vt,
             const int* ldvt, float* work, const int* lwork, int* iwork,
             int* info, size_t jobz_len);
void dgesdd_(const char* jobz, const int* m, const int* n, double* a,
             const int* lda, double* s, double* u, const int* ldu, double* vt,
             const int* ldvt, double* work, const int* lwork, int* iwork,
             int* info, size_t jobz_len);
}

namespace tensord {
namespace cpu {
namespace lapack {

// Overloads on the element type, so the kernels are templates.
inline void Getrf(int m, int n, float* a, int lda, int* ipiv, int* info) {
  sgetrf_(&m, &n, a, &lda, ipiv, info);
}
inline void Getrf(int m, int n, double* a, int lda, int* ipiv, int* info) {
  dgetrf_(&m, &n, a, &lda, ipiv, info);
}
inline void Getrs(char trans, int n, int nrhs, const float* a, int lda,
                  const int* ipiv, float* b, int ldb, int* info) {
  sgetrs_(&trans, &n, &nrhs, a, &lda, ipiv, b, &ldb, info, 1);
}
inline void Getrs(char trans, int n, int nrhs, const double* a, int lda,
                  const int* ipiv, double* b, int ldb, int* info) {
  dgetrs_(&trans, &n, &nrhs, a, &lda, ipiv, b, &ldb, info, 1);
}
inline void Potrf(char uplo, int n, float* a, int lda, int* info) {
  spotrf_(&uplo, &n, a, &lda, info, 1);
}
inline void Potrf(char uplo, int n, double* a, int lda, int* info) {
  dpotrf_(&uplo, &n, a, &lda, info, 1);
}
inline void Syevd(char jobz, char uplo, int n, float* a, int lda, float* w,
                  float* work, int lwork, int* iwork, int liwork, int* info) {
  ssyevd_(&jobz, &uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, info, 1,
          1);
}
inline void Syevd(char jobz, char uplo, int n, double* a, int lda, double* w,
                  double* work, int lwork, int* iwork, int liwork, int* info) {
  dsyevd_(&jobz, &uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, info, 1,
          1);
}
inline void Gesdd(char jobz, int m, int n, float* a, int lda, float* s,
                  float* u, int ldu, float* vt, int ldvt, float* work,
                  int lwork, int* iwork, int* info) {
  sgesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork,
          info, 1);
}
inline void Gesdd(char jobz, int m, int n, double* a, int lda, double* s,
                  double* u, int ldu, double* vt, int ldvt, double* work,
                  int lwork, int* iwork, int* info) {
  dgesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork,
          info, 1);
}

}  // namespace lapack
}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_LAPACK_H_
