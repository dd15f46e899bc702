// Research kernel (not part of loom's build): channels-last group norm as ONE cooperative
// kernel that keeps nothing in shared memory. Each set (R neighbouring groups of one sample) is
// read twice: once from DRAM for its statistics (kept in L2 with an evict_last policy), once
// more from L2 to normalize it. The grid-wide meeting is split so that no block waits for it:
//
//   step i:  statistics of set i (every block, its slice of positions, two exact passes over
//            registers) -> partials published -> arrive; the last block to arrive merges every
//            partial (Chan) and publishes the set's mean and rstd with a flag
//            then: wait for set i - 1's flag (published a whole step earlier), normalize set
//            i - 1 from L2 and store it.
//
// Slots alternate by parity: a block arrives for set i + 2 only after it has seen set i + 1's
// flag, so every block has arrived for set i, and set i's merge (by its last block, before that
// block's next arrival) is done. Counters and flags only grow within a launch; the last block
// out zeroes them. Results: bench/results/2026-11-23-h100-forward-experiments.md (1344-1482 GB/s,
// against 2019-2034 for loom's design: slower; not pursued).
//
//   nvcc -O3 -arch=sm_90 -std=c++17 research/gn_nhwc_l2.cu -o /tmp/gnl2 && /tmp/gnl2
//
// x: f16 [N, HW, C] (NHWC), 32 groups of C/32 = 4 channels (C = 128); w, b: f32 [C]; y like x.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "gn_common.cuh"

__device__ __forceinline__ unsigned long long policy(bool last) {
  unsigned long long p;
  if (last) asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  else asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}

template <int HINT>
__device__ __forceinline__ uint2 load8(const void* g, unsigned long long pol) {
  uint2 v;
  if (HINT) asm volatile("ld.global.L2::cache_hint.v2.u32 {%0, %1}, [%2], %3;" : "=r"(v.x), "=r"(v.y) : "l"(g), "l"(pol));
  else asm volatile("ld.global.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(g));
  return v;
}

template <int HINT>
__device__ __forceinline__ void store8(void* g, uint2 v, unsigned long long pol) {
  if (HINT) asm volatile("st.global.L2::cache_hint.v2.u32 [%0], {%1, %2}, %3;" ::"l"(g), "r"(v.x), "r"(v.y), "l"(pol) : "memory");
  else asm volatile("st.global.v2.u32 [%0], {%1, %2};" ::"l"(g), "r"(v.x), "r"(v.y) : "memory");
}

__device__ __forceinline__ unsigned ldAcquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// R groups per set (16: 128 bytes of each 256-byte position), THREADS per block, PPT pieces
// (8 bytes: one group's 4 channels at one position) per thread at most, HINT: L2 policies.
template <int R, int THREADS, int PPT, int MINB, int HINT, int PIPE, int LAG, int NG>
__global__ void __launch_bounds__(THREADS, MINB) gnL2(const __half* __restrict__ x, const float* __restrict__ w,
                                                      const float* __restrict__ b, __half* __restrict__ y, Shape s,
                                                      int P, int hwp, float4* ws, float2* fin, unsigned* sync) {
  constexpr int ppl = R * kCpg * 2 / 8;  // pieces per position
  static_assert(THREADS % ppl == 0, "a thread's pieces share one group");
  __shared__ Stats part[THREADS / 32][ppl];
  __shared__ float2 ms[R];
  __shared__ int last;
  // NG groups of P blocks, group g walking sets g, g + NG, ... (its j-th: step j's).
  const int rank = blockIdx.x % P, grp = blockIdx.x / P, tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int sets = (s.n * (kGroups / R) - grp + NG - 1) / NG;
  const int hw0 = rank * hwp, nhw = max(0, min(s.hw, hw0 + hwp) - hw0);
  const int units = nhw * ppl;
  const int jj = tid % ppl;  // the thread's piece within a position: group jj of the set
  constexpr int S = 4;          // slots: sets i and i + 4 share one
  unsigned* cnt = sync + grp * 512;  // [S] arrivals, stride 32 words
  unsigned* flag = cnt + 128;        // [S] sets published (set + 1)
  ws += size_t(grp) * S * R * P;
  fin += size_t(grp) * S * R;
  const unsigned long long keep = policy(true), drop = policy(false);
  auto base = [&](int j) {
    const int set = grp + j * NG;
    const int n = set / (kGroups / R), g0 = (set % (kGroups / R)) * R;
    return (size_t(n) * s.hw + hw0) * s.c + size_t(g0) * kCpg;
  };
  auto normalize = [&](int set) {  // set `set` from L2, with its published statistics
    if (tid == 0) {
      while (ldAcquire(flag + (set % S) * 32) < unsigned(set + 1)) __nanosleep(32);
    }
    __syncthreads();
    if (tid < R) {
      float2 f;
      const float2* at = fin + size_t(set % S) * R + tid;
      asm volatile("ld.relaxed.gpu.global.v2.f32 {%0,%1}, [%2];" : "=f"(f.x), "=f"(f.y) : "l"(at) : "memory");
      ms[tid] = f;
    }
    __syncthreads();
    const int g0 = ((grp + set * NG) % (kGroups / R)) * R;
    float scale[4], shift[4];
    for (int e = 0; e < 4; ++e) {
      const int ch = (g0 + jj) * kCpg + e;
      scale[e] = ms[jj].y * w[ch];
      shift[e] = b[ch] - ms[jj].x * scale[e];
    }
    const __half* src = x + base(set);
    __half* dst = y + base(set);
    uint2 v[PPT];
#pragma unroll
    for (int q = 0; q < PPT; ++q) {
      const int k = tid + q * THREADS;
      if (k < units) v[q] = load8<HINT>(reinterpret_cast<const unsigned char*>(src + size_t(k / ppl) * s.c) + jj * 8, drop);
    }
#pragma unroll
    for (int q = 0; q < PPT; ++q) {
      const int k = tid + q * THREADS;
      if (k < units) {
        const __half2* h = reinterpret_cast<const __half2*>(&v[q]);
        float2 a = __half22float2(h[0]), d = __half22float2(h[1]);
        uint2 o;
        __half2 o0 = __floats2half2_rn(a.x * scale[0] + shift[0], a.y * scale[1] + shift[1]);
        __half2 o1 = __floats2half2_rn(d.x * scale[2] + shift[2], d.y * scale[3] + shift[3]);
        o.x = *reinterpret_cast<unsigned*>(&o0);
        o.y = *reinterpret_cast<unsigned*>(&o1);
        store8<HINT>(reinterpret_cast<unsigned char*>(dst + size_t(k / ppl) * s.c) + jj * 8, o, drop);
      }
    }
  };
  for (int i = 0; i < sets + LAG; ++i) {
    uint2 v[PPT];
    auto issue = [&] {  // set i's pieces from DRAM into registers
      const __half* src = x + base(i);
#pragma unroll
      for (int q = 0; q < PPT; ++q) {
        const int k = tid + q * THREADS;
        if (k < units) v[q] = load8<HINT>(reinterpret_cast<const unsigned char*>(src + size_t(k / ppl) * s.c) + jj * 8, keep);
      }
    };
    if (PIPE && i < sets) issue();
    if (PIPE && i >= LAG) normalize(i - LAG);
    if (i < sets) {
      // Statistics of set i: the thread's pieces in registers, two exact passes.
      if (!PIPE) issue();
      float sum = 0.f;
      int c = 0;
#pragma unroll
      for (int q = 0; q < PPT; ++q)
        if (tid + q * THREADS < units) {
          const __half2* h = reinterpret_cast<const __half2*>(&v[q]);
          float2 a = __half22float2(h[0]), d = __half22float2(h[1]);
          sum += (a.x + a.y) + (d.x + d.y);
          c += 4;
        }
      const float mean = c ? sum / c : 0.f;
      float m2 = 0.f;
#pragma unroll
      for (int q = 0; q < PPT; ++q)
        if (tid + q * THREADS < units) {
          const __half2* h = reinterpret_cast<const __half2*>(&v[q]);
          float2 a = __half22float2(h[0]), d = __half22float2(h[1]);
          float e0 = a.x - mean, e1 = a.y - mean, e2 = d.x - mean, e3 = d.y - mean;
          m2 += (e0 * e0 + e1 * e1) + (e2 * e2 + e3 * e3);
        }
      Stats st{float(c), mean, m2};
      for (int off = ppl; off < 32; off *= 2) st = chan(st, shflStats(st, off));
      if (lane < ppl) part[warp][lane] = st;
      __syncthreads();
      float4* slot = ws + size_t(i % S) * R * P;
      for (int r = warp; r < R; r += THREADS / 32) {
        Stats a = lane < THREADS / 32 ? part[lane][r] : Stats{0.f, 0.f, 0.f};
        for (int off = 16; off >= 1; off /= 2) a = chan(a, shflStats(a, off));
        if (lane == 0) slot[size_t(r) * P + rank] = make_float4(a.n, a.mean, a.m2, 0.f);
      }
      __syncthreads();
      if (tid == 0) {
        unsigned old;
        asm volatile("atom.add.acq_rel.gpu.global.u32 %0, [%1], 1;" : "=r"(old) : "l"(cnt + (i % S) * 32) : "memory");
        last = old == unsigned(i / S + 1) * P - 1;
      }
      __syncthreads();
      if (last) {  // every block's partial is published: merge them, publish the set's statistics
        for (int r = warp; r < R; r += THREADS / 32) {
          Stats a{0.f, 0.f, 0.f};
          constexpr int kMax = 9;  // P <= 288: every load first, then the merges
          float4 q[kMax];
#pragma unroll
          for (int m = 0; m < kMax; ++m) {
            const float4* at = slot + size_t(r) * P + min(lane + 32 * m, P - 1);
            asm volatile("ld.relaxed.gpu.global.v4.f32 {%0,%1,%2,%3}, [%4];"
                         : "=f"(q[m].x), "=f"(q[m].y), "=f"(q[m].z), "=f"(q[m].w) : "l"(at));
          }
#pragma unroll
          for (int m = 0; m < kMax; ++m)
            if (lane + 32 * m < P) a = chan(a, Stats{q[m].x, q[m].y, q[m].z});
          for (int p = lane + 32 * kMax; p < P; p += 32) {
            float4 q1;
            const float4* at = slot + size_t(r) * P + p;
            asm volatile("ld.relaxed.gpu.global.v4.f32 {%0,%1,%2,%3}, [%4];"
                         : "=f"(q1.x), "=f"(q1.y), "=f"(q1.z), "=f"(q1.w) : "l"(at));
            a = chan(a, Stats{q1.x, q1.y, q1.z});
          }
          for (int off = 16; off >= 1; off /= 2) a = chan(a, shflStats(a, off));
          if (lane == 0) fin[size_t(i % S) * R + r] = make_float2(a.mean, rsqrtf(a.m2 / a.n + 1e-5f));
        }
        __syncthreads();
        if (tid == 0) asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(flag + (i % S) * 32), "r"(unsigned(i + 1)) : "memory");
      }
    }
    if (!PIPE && i >= LAG) normalize(i - LAG);
  }
  if (tid == 0) {  // the last block out zeroes the counters and flags for the next launch
    unsigned old = atomicAdd(cnt + 256, 1u);
    if (old == unsigned(P - 1)) {
      for (int k = 0; k < S; ++k) cnt[32 * k] = flag[32 * k] = 0;
      cnt[256] = 0;
    }
  }
}

struct Ctx {
  Shape s;
  __half *x, *y;
  float *w, *b, *maxerr;
  double *mean, *rstd;
  float4* ws;
  float2* fin;
  unsigned* sync;
  void* flush;
  cudaEvent_t e0, e1;
  int sms;
};

template <typename F>
float medianMs(Ctx& c, F launch, int iters = 25) {
  launch();
  CK(cudaDeviceSynchronize());
  std::vector<float> ms;
  for (int it = 0; it < iters; ++it) {
    CK(cudaMemsetAsync(c.flush, it, 256 << 20));
    CK(cudaEventRecord(c.e0));
    launch();
    CK(cudaEventRecord(c.e1));
    CK(cudaEventSynchronize(c.e1));
    float v;
    CK(cudaEventElapsedTime(&v, c.e0, c.e1));
    ms.push_back(v);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

template <int R, int THREADS, int PPT, int MINB, int HINT, int PIPE = 1, int LAG = 2, int NG = 1>
void run(Ctx& c, int per_sm, const char* label) {
  auto kern = gnL2<R, THREADS, PPT, MINB, HINT, PIPE, LAG, NG>;
  int fit = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, kern, THREADS, 0));
  int P = per_sm / NG * c.sms;  // blocks of each group
  const int hwp = (c.s.hw + P - 1) / P;
  constexpr int ppl = R * kCpg * 2 / 8;
  if (fit < per_sm || (hwp * ppl + THREADS - 1) / THREADS > PPT) {
    printf("%-56s does not fit (%d blocks/SM, %d pieces a thread)\n", label, fit, (hwp * ppl + THREADS - 1) / THREADS);
    return;
  }
  CK(cudaMemset(c.sync, 0, 4 * 512 * sizeof(unsigned)));
  CK(cudaMemset(c.y, 0xff, size_t(c.s.n) * c.s.hw * c.s.c * 2));
  auto launch = [&] {
    void* args[] = {&c.x, &c.w, &c.b, &c.y, &c.s, &P, const_cast<int*>(&hwp), &c.ws, &c.fin, &c.sync};
    CK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(kern), P * NG, THREADS, args, 0));
  };
  float best = 1e30f;
  float runs[2];
  for (int k = 0; k < 2; ++k) best = std::min(best, runs[k] = medianMs(c, launch));
  CK(cudaMemset(c.maxerr, 0, 4));
  CK(cudaMemset(c.y, 0xff, size_t(c.s.n) * c.s.hw * c.s.c * 2));
  launch();
  CK(cudaDeviceSynchronize());
  refCheck<<<1024, 256>>>(c.x, c.y, c.w, c.b, c.s, c.mean, c.rstd, c.maxerr);
  float err;
  CK(cudaMemcpy(&err, c.maxerr, 4, cudaMemcpyDeviceToHost));
  const double bytes = 2.0 * 2.0 * double(c.s.n) * c.s.hw * c.s.c;
  printf("%-56s %7.1f us  %6.0f, %6.0f GB/s  max err %.2e\n", label, best * 1e3, bytes / (runs[0] * 1e-3) / 1e9,
         bytes / (runs[1] * 1e-3) / 1e9, err);
}

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  Ctx c;
  c.s = Shape{32, 256 * 256, 128};
  if (argc > 2) c.s = Shape{atoi(argv[1]), atoi(argv[2]), 128};
  CK(cudaDeviceGetAttribute(&c.sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t elems = size_t(c.s.n) * c.s.hw * c.s.c;
  CK(cudaMalloc(&c.x, elems * 2));
  CK(cudaMalloc(&c.y, elems * 2));
  CK(cudaMalloc(&c.w, c.s.c * 4));
  CK(cudaMalloc(&c.b, c.s.c * 4));
  CK(cudaMalloc(&c.maxerr, 4));
  CK(cudaMalloc(&c.mean, c.s.n * kGroups * 8));
  CK(cudaMalloc(&c.rstd, c.s.n * kGroups * 8));
  CK(cudaMalloc(&c.ws, size_t(4) * 32 * 8 * 132 * sizeof(float4)));
  CK(cudaMalloc(&c.fin, size_t(16) * 32 * sizeof(float2)));
  CK(cudaMalloc(&c.sync, 4 * 512 * sizeof(unsigned)));
  CK(cudaMalloc(&c.flush, 256 << 20));
  CK(cudaEventCreate(&c.e0));
  CK(cudaEventCreate(&c.e1));
  fillRandom<<<1024, 256>>>(c.x, elems, 1234);
  std::vector<float> hw(c.s.c), hb(c.s.c);
  for (int i = 0; i < c.s.c; ++i) {
    hw[i] = 0.5f + 0.01f * i;
    hb[i] = -0.3f + 0.005f * i;
  }
  CK(cudaMemcpy(c.w, hw.data(), c.s.c * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(c.b, hb.data(), c.s.c * 4, cudaMemcpyHostToDevice));
  refStats<<<c.s.n * kGroups, 1024>>>(c.x, c.s, c.mean, c.rstd);
  CK(cudaDeviceSynchronize());
  const size_t n16 = elems * 2 / 16;
  float ms = medianMs(c, [&] { copyKernel<<<c.sms * 16, 512>>>(reinterpret_cast<uint4*>(c.x), reinterpret_cast<uint4*>(c.y), n16); });
  printf("N=%d HW=%d C=%d, %d SMs\n%-56s %7.1f us  %6.0f GB/s\n", c.s.n, c.s.hw, c.s.c, c.sms, "copy (same bytes)", ms * 1e3,
         2.0 * elems * 2 / (ms * 1e-3) / 1e9);
  // R, threads, pieces a thread (at most), blocks an SM (launch bound), L2 hints; then blocks an SM.
  run<16, 1024, 8, 1, 1, 1, 1>(c, 1, "R16 T1024 1 group, pipelined, lag 1");
  run<16, 512, 16, 2, 1, 1, 1, 2>(c, 2, "R16 T512 2 groups, pipelined, lag 1");
  run<16, 512, 16, 2, 1, 0, 1, 2>(c, 2, "R16 T512 2 groups, stats first, lag 1");
  run<16, 512, 16, 2, 1, 1, 2, 2>(c, 2, "R16 T512 2 groups, pipelined, lag 2");
  run<16, 352, 23, 3, 1, 1, 1, 3>(c, 3, "R16 T352 3 groups, pipelined, lag 1");
  run<16, 352, 23, 3, 1, 0, 1, 3>(c, 3, "R16 T352 3 groups, stats first, lag 1");
  run<16, 256, 32, 4, 1, 1, 1, 4>(c, 4, "R16 T256 4 groups, pipelined, lag 1");
  return 0;
}
