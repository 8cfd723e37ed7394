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
void sgeqrf_(const int* m, const int* n, float* a, const int* lda, float* tau,
             float* work, const int* lwork, int* info);
void dgeqrf_(const int* m, const int* n, double* a, const int* lda,
             double* tau, double* work, const int* lwork, int* info);
void sorgqr_(const int* m, const int* n, const int* k, float* a,
             const int* lda, const float* tau, float* work, const int* lwork,
             int* info);
void dorgqr_(const int* m, const int* n, const int* k, double* a,
             const int* lda, const double* tau, double* work,
             const int* lwork, int* info);
void sormqr_(const char* side, const char* trans, const int* m, const int* n,
             const int* k, const float* a, const int* lda, const float* tau,
             float* c, const int* ldc, float* work, const int* lwork,
             int* info, size_t side_len, size_t trans_len);
void dormqr_(const char* side, const char* trans, const int* m, const int* n,
             const int* k, const double* a, const int* lda, const double* tau,
             double* c, const int* ldc, double* work, const int* lwork,
             int* info, size_t side_len, size_t trans_len);
void sgels_(const char* trans, const int* m, const int* n, const int* nrhs,
            float* a, const int* lda, float* b, const int* ldb, float* work,
            const int* lwork, int* info, size_t trans_len);
void dgels_(const char* trans, const int* m, const int* n, const int* nrhs,
            double* a, const int* lda, double* b, const int* ldb, double* work,
            const int* lwork, int* info, size_t trans_len);
void sgelsy_(const int* m, const int* n, const int* nrhs, float* a,
             const int* lda, float* b, const int* ldb, int* jpvt,
             const float* rcond, int* rank, float* work, const int* lwork,
             int* info);
void dgelsy_(const int* m, const int* n, const int* nrhs, double* a,
             const int* lda, double* b, const int* ldb, int* jpvt,
             const double* rcond, int* rank, double* work, const int* lwork,
             int* info);
void sgelsd_(const int* m, const int* n, const int* nrhs, float* a,
             const int* lda, float* b, const int* ldb, float* s,
             const float* rcond, int* rank, float* work, const int* lwork,
             int* iwork, int* info);
void dgelsd_(const int* m, const int* n, const int* nrhs, double* a,
             const int* lda, double* b, const int* ldb, double* s,
             const double* rcond, int* rank, double* work, const int* lwork,
             int* iwork, int* info);
void sgelss_(const int* m, const int* n, const int* nrhs, float* a,
             const int* lda, float* b, const int* ldb, float* s,
             const float* rcond, int* rank, float* work, const int* lwork,
             int* info);
void dgelss_(const int* m, const int* n, const int* nrhs, double* a,
             const int* lda, double* b, const int* ldb, double* s,
             const double* rcond, int* rank, double* work, const int* lwork,
             int* info);
void ssytrf_(const char* uplo, const int* n, float* a, const int* lda,
             int* ipiv, float* work, const int* lwork, int* info,
             size_t uplo_len);
void dsytrf_(const char* uplo, const int* n, double* a, const int* lda,
             int* ipiv, double* work, const int* lwork, int* info,
             size_t uplo_len);
void ssytrs_(const char* uplo, const int* n, const int* nrhs, const float* a,
             const int* lda, const int* ipiv, float* b, const int* ldb,
             int* info, size_t uplo_len);
void dsytrs_(const char* uplo, const int* n, const int* nrhs, const double* a,
             const int* lda, const int* ipiv, double* b, const int* ldb,
             int* info, size_t uplo_len);
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

inline void Geqrf(int m, int n, float* a, int lda, float* tau, float* work,
                  int lwork, int* info) {
  sgeqrf_(&m, &n, a, &lda, tau, work, &lwork, info);
}
inline void Geqrf(int m, int n, double* a, int lda, double* tau, double* work,
                  int lwork, int* info) {
  dgeqrf_(&m, &n, a, &lda, tau, work, &lwork, info);
}
inline void Orgqr(int m, int n, int k, float* a, int lda, const float* tau,
                  float* work, int lwork, int* info) {
  sorgqr_(&m, &n, &k, a, &lda, tau, work, &lwork, info);
}
inline void Orgqr(int m, int n, int k, double* a, int lda, const double* tau,
                  double* work, int lwork, int* info) {
  dorgqr_(&m, &n, &k, a, &lda, tau, work, &lwork, info);
}
inline void Ormqr(char side, char trans, int m, int n, int k, const float* a,
                  int lda, const float* tau, float* c, int ldc, float* work,
                  int lwork, int* info) {
  sormqr_(&side, &trans, &m, &n, &k, a, &lda, tau, c, &ldc, work, &lwork, info,
          1, 1);
}
inline void Ormqr(char side, char trans, int m, int n, int k, const double* a,
                  int lda, const double* tau, double* c, int ldc, double* work,
                  int lwork, int* info) {
  dormqr_(&side, &trans, &m, &n, &k, a, &lda, tau, c, &ldc, work, &lwork, info,
          1, 1);
}
inline void Gels(int m, int n, int nrhs, float* a, int lda, float* b, int ldb,
                 float* work, int lwork, int* info) {
  const char trans = 'N';
  sgels_(&trans, &m, &n, &nrhs, a, &lda, b, &ldb, work, &lwork, info, 1);
}
inline void Gels(int m, int n, int nrhs, double* a, int lda, double* b,
                 int ldb, double* work, int lwork, int* info) {
  const char trans = 'N';
  dgels_(&trans, &m, &n, &nrhs, a, &lda, b, &ldb, work, &lwork, info, 1);
}
inline void Gelsy(int m, int n, int nrhs, float* a, int lda, float* b, int ldb,
                  int* jpvt, float rcond, int* rank, float* work, int lwork,
                  int* info) {
  sgelsy_(&m, &n, &nrhs, a, &lda, b, &ldb, jpvt, &rcond, rank, work, &lwork,
          info);
}
inline void Gelsy(int m, int n, int nrhs, double* a, int lda, double* b,
                  int ldb, int* jpvt, double rcond, int* rank, double* work,
                  int lwork, int* info) {
  dgelsy_(&m, &n, &nrhs, a, &lda, b, &ldb, jpvt, &rcond, rank, work, &lwork,
          info);
}
inline void Gelsd(int m, int n, int nrhs, float* a, int lda, float* b, int ldb,
                  float* s, float rcond, int* rank, float* work, int lwork,
                  int* iwork, int* info) {
  sgelsd_(&m, &n, &nrhs, a, &lda, b, &ldb, s, &rcond, rank, work, &lwork,
          iwork, info);
}
inline void Gelsd(int m, int n, int nrhs, double* a, int lda, double* b,
                  int ldb, double* s, double rcond, int* rank, double* work,
                  int lwork, int* iwork, int* info) {
  dgelsd_(&m, &n, &nrhs, a, &lda, b, &ldb, s, &rcond, rank, work, &lwork,
          iwork, info);
}
inline void Gelss(int m, int n, int nrhs, float* a, int lda, float* b, int ldb,
                  float* s, float rcond, int* rank, float* work, int lwork,
                  int* info) {
  sgelss_(&m, &n, &nrhs, a, &lda, b, &ldb, s, &rcond, rank, work, &lwork, info);
}
inline void Gelss(int m, int n, int nrhs, double* a, int lda, double* b,
                  int ldb, double* s, double rcond, int* rank, double* work,
                  int lwork, int* info) {
  dgelss_(&m, &n, &nrhs, a, &lda, b, &ldb, s, &rcond, rank, work, &lwork, info);
}
inline void Sytrf(char uplo, int n, float* a, int lda, int* ipiv, float* work,
                  int lwork, int* info) {
  ssytrf_(&uplo, &n, a, &lda, ipiv, work, &lwork, info, 1);
}
inline void Sytrf(char uplo, int n, double* a, int lda, int* ipiv,
                  double* work, int lwork, int* info) {
  dsytrf_(&uplo, &n, a, &lda, ipiv, work, &lwork, info, 1);
}
inline void Sytrs(char uplo, int n, int nrhs, const float* a, int lda,
                  const int* ipiv, float* b, int ldb, int* info) {
  ssytrs_(&uplo, &n, &nrhs, a, &lda, ipiv, b, &ldb, info, 1);
}
inline void Sytrs(char uplo, int n, int nrhs, const double* a, int lda,
                  const int* ipiv, double* b, int ldb, int* info) {
  dsytrs_(&uplo, &n, &nrhs, a, &lda, ipiv, b, &ldb, info, 1);
}

}  // namespace lapack
}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_LAPACK_H_
