// Shared by the channels-last group norm research kernels (not part of loom's build): error
// checks, the shape, Chan's merge, and the float64 reference (two passes) they are checked by.
#pragma once
#include <cuda_fp16.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(1);                                                                         \
    }                                                                                  \
  } while (0)

constexpr int kGroups = 32;
constexpr int kCpg = 4;  // channels per group: C = 128

struct Shape {
  int n, hw, c;
};

struct Stats {
  float n, mean, m2;
};

__device__ __forceinline__ Stats chan(Stats a, Stats b) {
  float n = a.n + b.n;
  if (n == 0.f) return a;
  float d = b.mean - a.mean;
  float fb = __fdividef(b.n, n);
  return Stats{n, a.mean + d * fb, a.m2 + b.m2 + d * d * a.n * fb};
}

__device__ __forceinline__ Stats shflStats(Stats s, int off) {
  return Stats{__shfl_xor_sync(~0u, s.n, off), __shfl_xor_sync(~0u, s.mean, off), __shfl_xor_sync(~0u, s.m2, off)};
}

// Reference: one block per (n, g), two passes in double.
__global__ void refStats(const __half* x, Shape s, double* mean, double* rstd) {
  const int n = blockIdx.x / kGroups, g = blockIdx.x % kGroups, cpg = s.c / kGroups;
  double sum = 0;
  for (size_t k = threadIdx.x; k < size_t(s.hw) * cpg; k += blockDim.x)
    sum += __half2float(x[(size_t(n) * s.hw + k / cpg) * s.c + g * cpg + k % cpg]);
  __shared__ double a[1024];
  a[threadIdx.x] = sum;
  __syncthreads();
  for (int o = blockDim.x / 2; o > 0; o /= 2) {
    if (threadIdx.x < o) a[threadIdx.x] += a[threadIdx.x + o];
    __syncthreads();
  }
  const double m = a[0] / (double(s.hw) * cpg);
  __syncthreads();
  double sq = 0;
  for (size_t k = threadIdx.x; k < size_t(s.hw) * cpg; k += blockDim.x) {
    const double d = __half2float(x[(size_t(n) * s.hw + k / cpg) * s.c + g * cpg + k % cpg]) - m;
    sq += d * d;
  }
  a[threadIdx.x] = sq;
  __syncthreads();
  for (int o = blockDim.x / 2; o > 0; o /= 2) {
    if (threadIdx.x < o) a[threadIdx.x] += a[threadIdx.x + o];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    mean[blockIdx.x] = m;
    rstd[blockIdx.x] = 1.0 / sqrt(a[0] / (double(s.hw) * cpg) + 1e-5);
  }
}

__global__ void refCheck(const __half* x, const __half* y, const float* w, const float* b, Shape s, const double* mean,
                         const double* rstd, float* maxerr) {
  const size_t total = size_t(s.n) * s.hw * s.c;
  float m = 0.f;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total; i += size_t(gridDim.x) * blockDim.x) {
    const int ch = int(i % s.c);
    const size_t n = i / (size_t(s.hw) * s.c);
    const int g = ch / (s.c / kGroups);
    const double r = (__half2float(x[i]) - mean[n * kGroups + g]) * rstd[n * kGroups + g] * w[ch] + b[ch];
    m = fmaxf(m, fabsf(float(r) - __half2float(y[i])));
  }
  atomicMax(reinterpret_cast<int*>(maxerr), __float_as_int(m));
}

__global__ void fillRandom(__half* x, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    x[i] = __float2half(float(h & 0xffff) / 65536.f * 2.f - 1.f + 0.25f * float((i >> 7) % 7));
  }
}

__global__ void copyKernel(const uint4* a, uint4* b, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) b[i] = a[i];
}

