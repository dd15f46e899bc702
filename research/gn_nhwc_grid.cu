// Research kernel (not part of loom's build; results in
// bench/results/2026-11-23-h100-grid-tier.md and, for the last-arriver merge (MODE 32)
// and the three-buffer pipeline (gnPipe),
// bench/results/2026-11-23-h100-forward-experiments.md): channels-last group norm on a cooperative grid,
// the design of loom's grid tier, with its choices as template parameters, so that each can be
// timed alone on the H100 and the phases of a block's cycle measured with clock64.
//
//   nvcc -O3 -arch=sm_90 -std=c++17 research/gn_nhwc_grid.cu -o /tmp/gn -lcuda && /tmp/gn
//
// x: f16 [N, HW, C] (NHWC), 32 groups of C/32 channels; w, b: f32 [C]; y: f16 like x.
// A set is R neighbouring groups of one sample; each of the P blocks of a grid group takes a
// slice of the set's HW positions (R * C/32 channels each, contiguous in memory), copies it to
// shared memory with cp.async, computes exact per-thread statistics (two passes over shared
// memory), merges them (Chan) in the block, publishes them, meets the other P - 1 blocks at a
// grid-wide barrier, merges every block's, and normalizes from shared memory.
#include <cuda.h>
#include <cuda_fp16.h>
#include <cooperative_groups.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gn_common.cuh"

template <int PIECE>
__device__ __forceinline__ void cpAsync(void* smem, const void* g) {
  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  if constexpr (PIECE == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(g) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(s), "l"(g) : "memory");
}

__device__ __forceinline__ void gridBarrier(unsigned* counter, unsigned target) {
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(counter) : "memory");
    unsigned seen;
    while (true) {
      asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(counter) : "memory");
      if (seen >= target) break;
      __nanosleep(64);
    }
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
  }
  __syncthreads();
}

// clock64 phases of block thread 0: fill, stats, barrier, merge, store.
constexpr int kPhases = 5;

// R groups per set, PIECE bytes per copy, BUFS fill buffers (2: the next set is copied while
// this one is worked on), THREADS per block. NOWAIT skips the grid barrier's wait (wrong
// results; the time without it is the design's bound).
template <int R, int PIECE, int BUFS, int THREADS, int MODE, int MINB>
__global__ void __launch_bounds__(THREADS, MINB) gnGrid(const __half* __restrict__ x, const float* __restrict__ w,
                                                   const float* __restrict__ b, __half* __restrict__ y, Shape s,
                                                   int P, int NG, int hwp, float4* ws, unsigned* counters,
                                                   unsigned long long* phase) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ Stats part[THREADS / 32][R > 32 ? R : 32];
  __shared__ float mean_s[R], rstd_s[R];
  constexpr int cpg = kCpg;
  constexpr int line = R * cpg * 2;     // bytes of a set at one position
  constexpr int ppl = line / PIECE;     // pieces per line
  constexpr int gpp = PIECE / 2 / cpg;  // groups per piece (>= 1: cpg * 2 <= PIECE)
  const int rank = blockIdx.x % P, grp = blockIdx.x / P;
  const int sets = s.n * (kGroups / R);
  const int hw0 = rank * hwp, nhw = max(0, min(s.hw, hw0 + hwp) - hw0);
  const int units = nhw * ppl;
  const size_t buf_bytes = size_t(hwp) * line;
  unsigned* counter = counters + grp * 32;
  float4* gws = ws + size_t(grp) * 2 * R * P;
  unsigned long long t[kPhases] = {};
  const int tid = threadIdx.x;

  auto setBase = [&](int set) {  // element offset of the set's first channel at position hw0
    const int n = set / (kGroups / R), g0 = (set % (kGroups / R)) * R;
    return (size_t(n) * s.hw + hw0) * s.c + size_t(g0) * cpg;
  };
  auto fill = [&](int set, unsigned char* buf) {
    const __half* src = x + setBase(set);
    for (int k = tid; k < units; k += THREADS) {
      const int h = k / ppl, j = k % ppl;
      cpAsync<PIECE>(buf + size_t(k) * PIECE, reinterpret_cast<const unsigned char*>(src + size_t(h) * s.c) + j * PIECE);
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
  };

  const int trips = (sets - grp + NG - 1) / NG;
  if (BUFS == 2 && trips > 0) fill(grp, smem);
  for (int i = 0; i < trips; ++i) {
    const int set = grp + i * NG;
    unsigned char* buf = smem + (BUFS == 2 ? (i & 1) * buf_bytes : 0);
    unsigned long long c0 = clock64();
    __syncthreads();
    if (BUFS == 2) {
      if (i + 1 < trips) fill(set + NG, smem + ((i + 1) & 1) * buf_bytes);
      else asm volatile("cp.async.commit_group;" ::: "memory");
      asm volatile("cp.async.wait_group 1;" ::: "memory");
    } else {
      fill(set, buf);
      asm volatile("cp.async.wait_group 0;" ::: "memory");
    }
    __syncthreads();
    unsigned long long c1 = clock64();
    // Per-thread statistics of its column (gpp groups of 4 channels), two passes, 16-byte
    // (or 8-byte) shared loads: lanes read consecutive pieces, no bank conflicts.
    Stats st[2];
    {
      constexpr int H = PIECE / 2;
      float sum[H > 4 ? 2 : 1] = {}, m2[H > 4 ? 2 : 1] = {};
      int cnt = 0;
      auto piece = [&](int k, float* v) {
        if constexpr (PIECE == 16) {
          uint4 u = *reinterpret_cast<const uint4*>(buf + size_t(k) * 16);
          const __half2* h = reinterpret_cast<const __half2*>(&u);
          for (int e = 0; e < 4; ++e) {
            float2 f = __half22float2(h[e]);
            v[2 * e] = f.x;
            v[2 * e + 1] = f.y;
          }
        } else {
          uint2 u = *reinterpret_cast<const uint2*>(buf + size_t(k) * 8);
          const __half2* h = reinterpret_cast<const __half2*>(&u);
          for (int e = 0; e < 2; ++e) {
            float2 f = __half22float2(h[e]);
            v[2 * e] = f.x;
            v[2 * e + 1] = f.y;
          }
        }
      };
      for (int k = tid; k < units; k += THREADS) {
        float v[H];
        piece(k, v);
        for (int e = 0; e < H; ++e) sum[e / cpg] += v[e];
        cnt += cpg;
        if (MODE & 2) break;
      }
      float mean[2];
      for (int q = 0; q < gpp; ++q) mean[q] = cnt ? sum[q] / cnt : 0.f;
      for (int k = tid; k < units; k += THREADS) {
        float v[H];
        piece(k, v);
        for (int e = 0; e < H; ++e) {
          const float d = v[e] - mean[e / cpg];
          m2[e / cpg] += d * d;
        }
        if (MODE & 2) break;
      }
      for (int q = 0; q < gpp; ++q) st[q] = Stats{float(cnt), mean[q], m2[q]};
    }
    // Merge lanes of the same column (ppl divides 32), then warps, per group of the set.
    for (int q = 0; q < gpp; ++q) {
      for (int off = ppl; off < 32; off *= 2) st[q] = chan(st[q], shflStats(st[q], off));
    }
    const int lane = tid % 32, warp = tid / 32;
    // Partial of group r = j * gpp + q: lanes j < ppl of each warp. With MODE & 4, warp r
    // merges group r's per-warp partials in a butterfly (depth 5) rather than one thread in a
    // chain of THREADS / 32.
    constexpr int W = THREADS / 32;
    if (MODE & 4) {
      for (int q = 0; q < gpp; ++q)
        if (lane < ppl) part[warp][lane * gpp + q] = st[q];
      __syncthreads();
      for (int r = warp; r < R; r += W) {
        Stats a = lane < W ? part[lane][r] : Stats{0.f, 0.f, 0.f};
        for (int off = 16; off >= 1; off /= 2) a = chan(a, shflStats(a, off));
        if (lane == 0) gws[size_t((i & 1) * R + r) * P + rank] = make_float4(a.n, a.mean, a.m2, 0.f);
      }
    } else {
      for (int q = 0; q < gpp; ++q) {
        if (lane < ppl) part[warp][lane] = st[q];
        __syncthreads();
        if (tid < ppl) {
          Stats a = part[0][tid];
          for (int v = 1; v < W; ++v) a = chan(a, part[v][tid]);
          gws[size_t((i & 1) * R + tid * gpp + q) * P + rank] = make_float4(a.n, a.mean, a.m2, 0.f);
        }
        __syncthreads();
      }
    }
    unsigned long long c2 = clock64();
    auto mergeAll = [&] {
    // Warp r merges group r's P partials (MODE & 8: none, unit statistics).
    for (int r = warp; r < R; r += THREADS / 32) {
      if (MODE & 8) {
        if (lane == 0) mean_s[r] = 0.f, rstd_s[r] = 1.f;
        continue;
      }
      Stats a{0.f, 0.f, 0.f};
      if (MODE & 16) {  // every load first, then the merges: one L2 round trip, not P / 32
        constexpr int kSlots = 5;  // P <= 160
        float4 v[kSlots];
        for (int m = 0; m < kSlots; ++m) {
          const int p = min(lane + 32 * m, P - 1);
          const float4* addr = gws + size_t((i & 1) * R + r) * P + p;
          asm volatile("ld.relaxed.gpu.global.v4.f32 {%0,%1,%2,%3}, [%4];"
                       : "=f"(v[m].x), "=f"(v[m].y), "=f"(v[m].z), "=f"(v[m].w)
                       : "l"(addr));
        }
        for (int m = 0; m < kSlots; ++m)
          if (lane + 32 * m < P) a = chan(a, Stats{v[m].x, v[m].y, v[m].z});
      } else
      for (int p = lane; p < P; p += 32) {
        float4 v;
        const float4* addr = gws + size_t((i & 1) * R + r) * P + p;
        asm volatile("ld.relaxed.gpu.global.v4.f32 {%0,%1,%2,%3}, [%4];"
                     : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                     : "l"(addr)
                     : "memory");
        a = chan(a, Stats{v.x, v.y, v.z});
      }
      for (int off = 16; off >= 1; off /= 2) a = chan(a, shflStats(a, off));
      if (lane == 0) {
        mean_s[r] = a.mean;
        rstd_s[r] = rsqrtf(a.m2 / a.n + 1e-5f);
      }
    }
    };
    unsigned long long c3, c4;
    if (MODE & 32) {
      // The last block to arrive merges every partial and publishes the set's statistics
      // (a flag, word 8 of the group's counters); the others wait for the flag and read them.
      __shared__ int last;
      float2* fin = reinterpret_cast<float2*>(ws + size_t(NG) * 2 * R * P) + size_t(grp) * 2 * R + (i & 1) * R;
      __syncthreads();
      if (tid == 0) {
        unsigned old;
        asm volatile("atom.add.acq_rel.gpu.global.u32 %0, [%1], 1;" : "=r"(old) : "l"(counter) : "memory");
        last = old == unsigned(i + 1) * P - 1;
      }
      __syncthreads();
      c3 = clock64();
      if (last) {
        mergeAll();
        __syncthreads();
        if (tid < R) fin[tid] = make_float2(mean_s[tid], rstd_s[tid]);
        __syncthreads();
        if (tid == 0) asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(counter + 8), "r"(unsigned(i + 1)) : "memory");
      } else {
        if (tid == 0) {
          unsigned seen;
          while (true) {
            asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(counter + 8) : "memory");
            if (seen >= unsigned(i + 1)) break;
            __nanosleep(64);
          }
          asm volatile("fence.acq_rel.gpu;" ::: "memory");
        }
        __syncthreads();
        if (tid < R) {
          float2 f;
          asm volatile("ld.relaxed.gpu.global.v2.f32 {%0,%1}, [%2];" : "=f"(f.x), "=f"(f.y) : "l"(fin + tid) : "memory");
          mean_s[tid] = f.x;
          rstd_s[tid] = f.y;
        }
      }
      __syncthreads();
      c4 = clock64();
    } else {
    if (!(MODE & 1)) gridBarrier(counter, unsigned(i + 1) * P);
    else __syncthreads();
    c3 = clock64();
    mergeAll();
    __syncthreads();
    c4 = clock64();
    }
    // Normalize from shared memory, store whole lines: the thread's column is fixed, so its
    // channels' scale and shift are computed once.
    {
      const int g0 = (set % (kGroups / R)) * R;
      __half* dst = y + setBase(set);
      constexpr int H = PIECE / 2;
      const int jj = tid % ppl;
      float scale[H], shift[H];
      for (int e = 0; e < H; ++e) {
        const int r = jj * gpp + e / cpg;
        const int ch = (g0 + r) * cpg + e % cpg;
        scale[e] = rstd_s[r] * w[ch];
        shift[e] = b[ch] - mean_s[r] * scale[e];
      }
      for (int k = tid; k < units; k += THREADS) {
        const int h = k / ppl;
        alignas(16) __half2 out[H / 2];
        alignas(16) __half2 in[H / 2];
        if constexpr (PIECE == 16) *reinterpret_cast<uint4*>(in) = *reinterpret_cast<const uint4*>(buf + size_t(k) * 16);
        else *reinterpret_cast<uint2*>(in) = *reinterpret_cast<const uint2*>(buf + size_t(k) * 8);
        for (int e = 0; e < H / 2; ++e) {
          float2 f = __half22float2(in[e]);
          out[e] = __floats2half2_rn(f.x * scale[2 * e] + shift[2 * e], f.y * scale[2 * e + 1] + shift[2 * e + 1]);
        }
        unsigned char* d = reinterpret_cast<unsigned char*>(dst + size_t(h) * s.c) + jj * PIECE;
        if constexpr (PIECE == 16) *reinterpret_cast<uint4*>(d) = *reinterpret_cast<uint4*>(out);
        else *reinterpret_cast<uint2*>(d) = *reinterpret_cast<uint2*>(out);
      }
    }
    unsigned long long c5 = clock64();
    t[0] += c1 - c0;
    t[1] += c2 - c1;
    t[2] += c3 - c2;
    t[3] += c4 - c3;
    t[4] += c5 - c4;
  }
  if (tid == 0) {
    for (int q = 0; q < kPhases; ++q) atomicAdd(phase + q, t[q]);
    // Last block out zeroes the counter (as loom does) so the next launch starts from 0.
    unsigned old = atomicAdd(counter + 16, 1u);
    if (old == unsigned(P - 1)) {
      counter[0] = 0;
      counter[8] = 0;
      counter[16] = 0;
    }
  }
}


// The same design with the copies made by the Tensor Memory Accelerator: one warp issues a
// 16-byte-multiple bulk copy per position (the set's line there) into shared memory,
// completing on an mbarrier; the threads compute statistics, normalize in place in shared
// memory, and the warp issues bulk stores back. Threads never hold the data in flight.
__device__ __forceinline__ unsigned smemAddr(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

constexpr int kBoxRows = 71;  // 497 = 7 x 71 positions per block at P = 132

template <int R, int THREADS, int MODE, int MINB, bool TENSOR>
__global__ void __launch_bounds__(THREADS, MINB) gnTma(const __half* __restrict__ x, const float* __restrict__ w,
                                                        const float* __restrict__ b, __half* __restrict__ y, Shape s,
                                                        int P, int NG, int hwp, float4* ws, unsigned* counters,
                                                        unsigned long long* phase, const __grid_constant__ CUtensorMap tx,
                                                        const __grid_constant__ CUtensorMap ty) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  // TMA boxes need 128-byte-aligned shared memory: the launch adds 128 bytes to align by.
  unsigned char* smem = smem_raw + ((128 - (smemAddr(smem_raw) & 127)) & 127);
  __shared__ Stats part[THREADS / 32][32];
  __shared__ float mean_s[R], rstd_s[R];
  __shared__ __align__(8) unsigned long long bar;
  constexpr int cpg = kCpg;
  constexpr int line = R * cpg * 2;  // bytes
  constexpr int ppl = line / 8;      // 8-byte pieces (one group each) per line
  const int rank = blockIdx.x % P, grp = blockIdx.x / P;
  const int sets = s.n * (kGroups / R);
  const int hw0 = rank * hwp, nhw = max(0, min(s.hw, hw0 + hwp) - hw0);
  const int units = nhw * ppl;
  unsigned* counter = counters + grp * 32;
  float4* gws = ws + size_t(grp) * 2 * R * P;
  unsigned long long t[kPhases] = {};
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const unsigned bar_a = smemAddr(&bar);
  if (tid == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar_a) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  auto setBase = [&](int set) {
    const int n = set / (kGroups / R), g0 = (set % (kGroups / R)) * R;
    return (size_t(n) * s.hw + hw0) * s.c + size_t(g0) * cpg;
  };
  const int trips = (sets - grp + NG - 1) / NG;
  for (int i = 0; i < trips; ++i) {
    const int set = grp + i * NG;
    unsigned long long c0 = clock64();
    // Fill: warp 0 issues one bulk copy per position.
    const int boxes = (hwp + kBoxRows - 1) / kBoxRows;
    if (TENSOR && tid == 0) {
      const int n = set / (kGroups / R), c0 = (set % (kGroups / R)) * R * cpg;
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar_a), "r"(boxes * kBoxRows * line) : "memory");
      for (int q = 0; q < boxes; ++q)
        asm volatile(
            "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(
                smemAddr(smem + size_t(q) * kBoxRows * line)),
            "l"(&tx), "r"(c0), "r"(hw0 + q * kBoxRows), "r"(n), "r"(bar_a)
            : "memory");
    }
    if (!TENSOR && warp == 0) {
      if (lane == 0)
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar_a), "r"(nhw * line) : "memory");
      __syncwarp();
      const __half* src = x + setBase(set);
      for (int h = lane; h < nhw; h += 32)
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                         smemAddr(smem + size_t(h) * line)),
                     "l"(src + size_t(h) * s.c), "n"(line), "r"(bar_a)
                     : "memory");
    }
    {
      unsigned done = 0;
      while (!done)
        asm volatile(
            "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
            : "=r"(done)
            : "r"(bar_a), "r"(unsigned(i & 1))
            : "memory");
    }
    unsigned long long c1 = clock64();
    const unsigned char* buf = smem;
    Stats st;
    {
      float sum = 0.f, m2 = 0.f;
      int cnt = 0;
      for (int k = tid; k < units; k += THREADS) {
        uint2 u = *reinterpret_cast<const uint2*>(buf + size_t(k) * 8);
        const __half2* h = reinterpret_cast<const __half2*>(&u);
        float2 a = __half22float2(h[0]), c = __half22float2(h[1]);
        sum += (a.x + a.y) + (c.x + c.y);
        cnt += 4;
        if (MODE & 2) break;
      }
      const float mean = cnt ? sum / cnt : 0.f;
      for (int k = tid; k < units; k += THREADS) {
        uint2 u = *reinterpret_cast<const uint2*>(buf + size_t(k) * 8);
        const __half2* h = reinterpret_cast<const __half2*>(&u);
        float2 a = __half22float2(h[0]), c = __half22float2(h[1]);
        a.x -= mean, a.y -= mean, c.x -= mean, c.y -= mean;
        m2 += (a.x * a.x + a.y * a.y) + (c.x * c.x + c.y * c.y);
        if (MODE & 2) break;
      }
      st = Stats{float(cnt), mean, m2};
    }
    for (int off = ppl; off < 32; off *= 2) st = chan(st, shflStats(st, off));
    constexpr int W = THREADS / 32;
    if (lane < ppl) part[warp][lane] = st;
    __syncthreads();
    for (int r = warp; r < R; r += W) {
      Stats a = lane < W ? part[lane][r] : Stats{0.f, 0.f, 0.f};
      for (int off = 16; off >= 1; off /= 2) a = chan(a, shflStats(a, off));
      if (lane == 0) gws[size_t((i & 1) * R + r) * P + rank] = make_float4(a.n, a.mean, a.m2, 0.f);
    }
    unsigned long long c2 = clock64();
    if (!(MODE & 1)) gridBarrier(counter, unsigned(i + 1) * P);
    else __syncthreads();
    unsigned long long c3 = clock64();
    for (int r = warp; r < R; r += W) {
      Stats a{0.f, 0.f, 0.f};
      for (int p = lane; p < P; p += 32) {
        float4 v;
        const float4* addr = gws + size_t((i & 1) * R + r) * P + p;
        asm volatile("ld.relaxed.gpu.global.v4.f32 {%0,%1,%2,%3}, [%4];"
                     : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                     : "l"(addr)
                     : "memory");
        a = chan(a, Stats{v.x, v.y, v.z});
      }
      for (int off = 16; off >= 1; off /= 2) a = chan(a, shflStats(a, off));
      if (lane == 0) {
        mean_s[r] = a.mean;
        rstd_s[r] = rsqrtf(a.m2 / a.n + 1e-5f);
      }
    }
    __syncthreads();
    unsigned long long c4 = clock64();
    {
      const int g0 = (set % (kGroups / R)) * R;
      const int r = tid % ppl;
      float scale[4], shift[4];
      for (int e = 0; e < 4; ++e) {
        const int ch = (g0 + r) * cpg + e;
        scale[e] = rstd_s[r] * w[ch];
        shift[e] = b[ch] - mean_s[r] * scale[e];
      }
      for (int k = tid; k < units; k += THREADS) {
        uint2* p = reinterpret_cast<uint2*>(smem + size_t(k) * 8);
        uint2 u = *p;
        __half2* h = reinterpret_cast<__half2*>(&u);
        float2 a = __half22float2(h[0]), c = __half22float2(h[1]);
        h[0] = __floats2half2_rn(a.x * scale[0] + shift[0], a.y * scale[1] + shift[1]);
        h[1] = __floats2half2_rn(c.x * scale[2] + shift[2], c.y * scale[3] + shift[3]);
        *p = u;
      }
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      __syncthreads();
      if (TENSOR && tid == 0) {
        const int n = set / (kGroups / R), c0 = (set % (kGroups / R)) * R * cpg;
        for (int q = 0; q < boxes; ++q)
          asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%1, %2, %3}], [%4];" ::"l"(&ty),
                       "r"(c0), "r"(hw0 + q * kBoxRows), "r"(n), "r"(smemAddr(smem + size_t(q) * kBoxRows * line))
                       : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
      }
      if (!TENSOR && warp == 0) {
        __half* dst = y + setBase(set);
        for (int h = lane; h < nhw; h += 32)
          asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst + size_t(h) * s.c),
                       "r"(smemAddr(smem + size_t(h) * line)), "n"(line)
                       : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
      }
      __syncthreads();
    }
    unsigned long long c5 = clock64();
    t[0] += c1 - c0;
    t[1] += c2 - c1;
    t[2] += c3 - c2;
    t[3] += c4 - c3;
    t[4] += c5 - c4;
  }
  if (tid == 0) {
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    for (int q = 0; q < kPhases; ++q) atomicAdd(phase + q, t[q]);
    unsigned old = atomicAdd(counter + 16, 1u);
    if (old == unsigned(P - 1)) {
      counter[0] = 0;
      counter[16] = 0;
    }
  }
}

// Copies the first `frac` of every 256-byte line (channels of the first R groups at each
// position): the access pattern of one set, without anything else.
__global__ void partCopy(const uint4* a, uint4* b, size_t lines, int per_line) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < lines * per_line; i += size_t(gridDim.x) * blockDim.x) {
    const size_t l = i / per_line, j = i % per_line;
    b[l * 16 + j] = a[l * 16 + j];
  }
}

struct Bench {
  void* flush;
  cudaEvent_t e0, e1;
  Bench() {
    CK(cudaMalloc(&flush, 256 << 20));
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
  }
  template <typename F>
  float medianMs(F launch, int iters = 25) {
    launch();
    CK(cudaDeviceSynchronize());
    std::vector<float> ms;
    for (int it = 0; it < iters; ++it) {
      CK(cudaMemsetAsync(flush, it, 256 << 20));
      CK(cudaEventRecord(e0));
      launch();
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float v;
      CK(cudaEventElapsedTime(&v, e0, e1));
      ms.push_back(v);
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  }
};

struct Ctx {
  Shape s;
  __half *x, *y;
  float *w, *b, *maxerr;
  double *mean, *rstd;
  float4* ws;
  unsigned* counters;
  unsigned long long* phase;
  CUtensorMap tx[2], ty[2];  // boxes of 64 or 128 channels
  int sms;
  Bench bench;
};

template <int R, int PIECE, int BUFS, int THREADS, int MINB = 1, int MODE = 0, bool TMA = false>
void run(Ctx& c, int NG, const char* label, int P = 0) {
  if (P == 0) P = c.sms;
  const int hwp = (c.s.hw + P - 1) / P;
  const int cpg = c.s.c / kGroups;
  const size_t smem = size_t(BUFS) * hwp * R * cpg * 2;
  auto kern = gnGrid<R, (PIECE == 0 ? 8 : PIECE), BUFS, THREADS, MODE, MINB>;
  auto tkern = gnTma<R, THREADS, MODE, MINB, (PIECE == 0)>;
  const size_t smem_t = TMA ? size_t((hwp + kBoxRows - 1) / kBoxRows) * kBoxRows * R * cpg * 2 + 128 : smem;
  if (TMA) {
    CK(cudaFuncSetAttribute(tkern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem_t)));
  } else {
    CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  }
  int per_sm = 0;
  if (TMA) CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, tkern, THREADS, smem_t));
  else CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, THREADS, smem));
  if (per_sm * c.sms < NG * P) {
    printf("%-48s does not fit: %d blocks/SM of %zu B smem, need %d blocks\n", label, per_sm, smem, NG * P);
    return;
  }
  CK(cudaMemset(c.counters, 0, 64 * 32 * sizeof(unsigned)));
  CK(cudaMemset(c.y, 0xff, size_t(c.s.n) * c.s.hw * c.s.c * 2));
  int grid = P * NG;
  auto launch = [&] {
    void* args[] = {&c.x, &c.w, &c.b, &c.y, &c.s, &P, &NG, const_cast<int*>(&hwp), &c.ws, &c.counters, &c.phase, &c.tx[R == 32], &c.ty[R == 32]};
    if (TMA) CK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(tkern), grid, THREADS, args, smem_t));
    else CK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(kern), grid, THREADS, args, smem));
  };
  float ms = c.bench.medianMs(launch);
  // Phases from one more launch.
  CK(cudaMemset(c.phase, 0, kPhases * sizeof(unsigned long long)));
  CK(cudaMemset(c.maxerr, 0, 4));
  launch();
  CK(cudaDeviceSynchronize());
  refCheck<<<1024, 256>>>(c.x, c.y, c.w, c.b, c.s, c.mean, c.rstd, c.maxerr);
  float err;
  unsigned long long ph[kPhases];
  CK(cudaMemcpy(&err, c.maxerr, 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(ph, c.phase, sizeof ph, cudaMemcpyDeviceToHost));
  double tot = 0;
  for (auto v : ph) tot += double(v);
  const double bytes = 2.0 * 2.0 * double(c.s.n) * c.s.hw * c.s.c;
  printf("%-48s %7.1f us %6.0f GB/s  err %.2e  phases%%: fill %4.1f stats %4.1f barrier %4.1f merge %4.1f store %4.1f\n",
         label, ms * 1e3, bytes / (ms * 1e-3) / 1e9, err, 100 * ph[0] / tot, 100 * ph[1] / tot, 100 * ph[2] / tot,
         100 * ph[3] / tot, 100 * ph[4] / tot);
}

// Three fill buffers and no wait for a whole set: in iteration i a block copies set i + 2,
// takes the statistics of set i + 1 (copied during the last iteration) and publishes them, and
// only then waits for set i's grid-wide meeting, merges it and normalizes set i. The wait has a
// whole iteration of slack. Partials in 4 slots by set, arrivals in 2 counters by parity (a
// block arrives for set i + 2 only after every block has arrived for set i).
template <int R, int THREADS, int MINB>
__global__ void __launch_bounds__(THREADS, MINB) gnPipe(const __half* __restrict__ x, const float* __restrict__ w,
                                                       const float* __restrict__ b, __half* __restrict__ y, Shape s,
                                                       int P, int hwp, float4* ws, unsigned* counters,
                                                       unsigned long long* phase) {
  extern __shared__ __align__(16) unsigned char smem[];
  constexpr int cpg = kCpg, line = R * cpg * 2, ppl = line / 8;
  __shared__ Stats part[THREADS / 32][32];
  __shared__ float mean_s[R], rstd_s[R];
  const int rank = blockIdx.x, tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int sets = s.n * (kGroups / R);
  const int hw0 = rank * hwp, nhw = max(0, min(s.hw, hw0 + hwp) - hw0);
  const int units = nhw * ppl;
  const size_t buf_bytes = size_t(hwp) * line;
  unsigned long long t[kPhases] = {};
  auto setBase = [&](int set) {
    const int n = set / (kGroups / R), g0 = (set % (kGroups / R)) * R;
    return (size_t(n) * s.hw + hw0) * s.c + size_t(g0) * cpg;
  };
  auto buf = [&](int set) { return smem + size_t(set % 3) * buf_bytes; };
  auto fill = [&](int set) {
    if (set < sets) {
      const __half* src = x + setBase(set);
      for (int k = tid; k < units; k += THREADS)
        cpAsync<8>(buf(set) + size_t(k) * 8, reinterpret_cast<const unsigned char*>(src + size_t(k / ppl) * s.c) + (k % ppl) * 8);
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
  };
  // Statistics of `set` from its buffer, published as this block's partials, then arrival.
  auto statsAndArrive = [&](int set) {
    const unsigned char* bp = buf(set);
    float sum = 0.f, m2 = 0.f;
    int cnt = 0;
    for (int k = tid; k < units; k += THREADS) {
      uint2 u = *reinterpret_cast<const uint2*>(bp + size_t(k) * 8);
      const __half2* h = reinterpret_cast<const __half2*>(&u);
      float2 a = __half22float2(h[0]), c = __half22float2(h[1]);
      sum += (a.x + a.y) + (c.x + c.y);
      cnt += 4;
    }
    const float mean = cnt ? sum / cnt : 0.f;
    for (int k = tid; k < units; k += THREADS) {
      uint2 u = *reinterpret_cast<const uint2*>(bp + size_t(k) * 8);
      const __half2* h = reinterpret_cast<const __half2*>(&u);
      float2 a = __half22float2(h[0]), c = __half22float2(h[1]);
      float d0 = a.x - mean, d1 = a.y - mean, d2 = c.x - mean, d3 = c.y - mean;
      m2 += (d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3);
    }
    Stats st{float(cnt), mean, m2};
    for (int off = ppl; off < 32; off *= 2) st = chan(st, shflStats(st, off));
    if (lane < ppl) part[warp][lane] = st;
    __syncthreads();
    float4* slot = ws + size_t(set % 4) * R * P;
    for (int r = warp; r < R; r += THREADS / 32) {
      Stats a = lane < THREADS / 32 ? part[lane][r] : Stats{0.f, 0.f, 0.f};
      for (int off = 16; off >= 1; off /= 2) a = chan(a, shflStats(a, off));
      if (lane == 0) slot[size_t(r) * P + rank] = make_float4(a.n, a.mean, a.m2, 0.f);
    }
    __syncthreads();
    if (tid == 0) asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(counters + (set & 1) * 32) : "memory");
  };
  fill(0);
  fill(1);
  asm volatile("cp.async.wait_group 1;" ::: "memory");
  __syncthreads();
  statsAndArrive(0);
  for (int i = 0; i < sets; ++i) {
    unsigned long long c0 = clock64();
    __syncthreads();  // set i - 1's buffer (set i + 2's now) is no longer read
    fill(i + 2);
    asm volatile("cp.async.wait_group 1;" ::: "memory");
    __syncthreads();
    unsigned long long c1 = clock64();
    if (i + 1 < sets) statsAndArrive(i + 1);
    unsigned long long c2 = clock64();
    if (tid == 0) {
      const unsigned target = unsigned(i / 2 + 1) * P;
      unsigned seen;
      while (true) {
        asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(counters + (i & 1) * 32) : "memory");
        if (seen >= target) break;
        __nanosleep(64);
      }
      asm volatile("fence.acq_rel.gpu;" ::: "memory");
    }
    __syncthreads();
    unsigned long long c3 = clock64();
    for (int r = warp; r < R; r += THREADS / 32) {
      Stats a{0.f, 0.f, 0.f};
      for (int p = lane; p < P; p += 32) {
        float4 v;
        const float4* addr = ws + size_t(i % 4) * R * P + size_t(r) * P + p;
        asm volatile("ld.relaxed.gpu.global.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(addr));
        a = chan(a, Stats{v.x, v.y, v.z});
      }
      for (int off = 16; off >= 1; off /= 2) a = chan(a, shflStats(a, off));
      if (lane == 0) {
        mean_s[r] = a.mean;
        rstd_s[r] = rsqrtf(a.m2 / a.n + 1e-5f);
      }
    }
    __syncthreads();
    unsigned long long c4 = clock64();
    {
      const int g0 = (i % (kGroups / R)) * R;
      __half* dst = y + setBase(i);
      const unsigned char* bp = buf(i);
      const int jj = tid % ppl;
      float scale[4], shift[4];
      for (int e = 0; e < 4; ++e) {
        const int ch = (g0 + jj) * cpg + e;
        scale[e] = rstd_s[jj] * w[ch];
        shift[e] = b[ch] - mean_s[jj] * scale[e];
      }
      for (int k = tid; k < units; k += THREADS) {
        uint2 u = *reinterpret_cast<const uint2*>(bp + size_t(k) * 8);
        const __half2* h = reinterpret_cast<const __half2*>(&u);
        float2 a = __half22float2(h[0]), c = __half22float2(h[1]);
        __half2 o0 = __floats2half2_rn(a.x * scale[0] + shift[0], a.y * scale[1] + shift[1]);
        __half2 o1 = __floats2half2_rn(c.x * scale[2] + shift[2], c.y * scale[3] + shift[3]);
        uint2 o{*reinterpret_cast<unsigned*>(&o0), *reinterpret_cast<unsigned*>(&o1)};
        *reinterpret_cast<uint2*>(reinterpret_cast<unsigned char*>(dst + size_t(k / ppl) * s.c) + jj * 8) = o;
      }
    }
    unsigned long long c5 = clock64();
    t[0] += c1 - c0;
    t[1] += c2 - c1;
    t[2] += c3 - c2;
    t[3] += c4 - c3;
    t[4] += c5 - c4;
  }
  if (tid == 0) {
    for (int q = 0; q < kPhases; ++q) atomicAdd(phase + q, t[q]);
    unsigned old = atomicAdd(counters + 64, 1u);
    if (old == unsigned(P - 1)) {
      counters[0] = 0;
      counters[32] = 0;
      counters[64] = 0;
    }
  }
}

template <int R, int THREADS, int MINB = 1>
void runPipe(Ctx& c, const char* label, int per_sm = 1) {
  const int P = c.sms * per_sm;
  const int hwp = (c.s.hw + P - 1) / P;
  const size_t smem = size_t(3) * hwp * R * kCpg * 2;
  auto kern = gnPipe<R, THREADS, MINB>;
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  int fit = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, kern, THREADS, smem));
  if (fit < per_sm) {
    printf("%-48s does not fit: %d blocks/SM of %zu B smem\n", label, fit, smem);
    return;
  }
  CK(cudaMemset(c.counters, 0, 64 * 32 * sizeof(unsigned)));
  CK(cudaMemset(c.y, 0xff, size_t(c.s.n) * c.s.hw * c.s.c * 2));
  int Pv = P, hv = hwp;
  auto launch = [&] {
    void* args[] = {&c.x, &c.w, &c.b, &c.y, &c.s, &Pv, &hv, &c.ws, &c.counters, &c.phase};
    CK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(kern), P, THREADS, args, smem));
  };
  float ms = c.bench.medianMs(launch);
  CK(cudaMemset(c.phase, 0, kPhases * sizeof(unsigned long long)));
  CK(cudaMemset(c.maxerr, 0, 4));
  CK(cudaMemset(c.y, 0xff, size_t(c.s.n) * c.s.hw * c.s.c * 2));
  launch();
  CK(cudaDeviceSynchronize());
  refCheck<<<1024, 256>>>(c.x, c.y, c.w, c.b, c.s, c.mean, c.rstd, c.maxerr);
  float err;
  unsigned long long ph[kPhases];
  CK(cudaMemcpy(&err, c.maxerr, 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(ph, c.phase, sizeof ph, cudaMemcpyDeviceToHost));
  double tot = 0;
  for (auto v : ph) tot += double(v);
  const double bytes = 2.0 * 2.0 * double(c.s.n) * c.s.hw * c.s.c;
  printf("%-48s %7.1f us %6.0f GB/s  err %.2e  phases%%: fill %4.1f stats(next) %4.1f wait %4.1f merge %4.1f store %4.1f\n",
         label, ms * 1e3, bytes / (ms * 1e-3) / 1e9, err, 100 * ph[0] / tot, 100 * ph[1] / tot, 100 * ph[2] / tot,
         100 * ph[3] / tot, 100 * ph[4] / tot);
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
  for (int k = 0; k < 2; ++k)
    for (int which = 0; which < 2; ++which) {
      cuuint64_t dims[3] = {cuuint64_t(c.s.c), cuuint64_t(c.s.hw), cuuint64_t(c.s.n)};
      cuuint64_t strides[2] = {cuuint64_t(c.s.c) * 2, cuuint64_t(c.s.c) * 2 * c.s.hw};
      cuuint32_t box[3] = {cuuint32_t(k ? 128 : 64), cuuint32_t(kBoxRows), 1};
      cuuint32_t estr[3] = {1, 1, 1};
      CUresult r = cuTensorMapEncodeTiled(which ? &c.ty[k] : &c.tx[k], CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 3, which ? (void*)c.y : (void*)c.x,
                                          dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                          CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
      if (r != CUDA_SUCCESS) {
        fprintf(stderr, "cuTensorMapEncodeTiled: %d\n", int(r));
        exit(1);
      }
    }
  CK(cudaMalloc(&c.w, c.s.c * 4));
  CK(cudaMalloc(&c.b, c.s.c * 4));
  CK(cudaMalloc(&c.maxerr, 4));
  CK(cudaMalloc(&c.mean, c.s.n * kGroups * 8));
  CK(cudaMalloc(&c.rstd, c.s.n * kGroups * 8));
  CK(cudaMalloc(&c.ws, size_t(16) * 2 * 32 * 256 * sizeof(float4)));
  CK(cudaMalloc(&c.counters, 64 * 32 * sizeof(unsigned)));
  CK(cudaMalloc(&c.phase, kPhases * sizeof(unsigned long long)));
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
  {
    const size_t n16 = elems * 2 / 16;
    float ms = c.bench.medianMs([&] { copyKernel<<<c.sms * 16, 512>>>(reinterpret_cast<uint4*>(c.x), reinterpret_cast<uint4*>(c.y), n16); });
    printf("%-48s %7.1f us %6.0f GB/s\n", "copy (same bytes)", ms * 1e3, 2.0 * elems * 2 / (ms * 1e-3) / 1e9);
  }
  printf("N=%d HW=%d C=%d, %d SMs\n", c.s.n, c.s.hw, c.s.c, c.sms);
  for (int per : {16, 8, 4, 2}) {
    const size_t lines = elems * 2 / 256;
    float ms = c.bench.medianMs([&] { partCopy<<<c.sms * 16, 512>>>(reinterpret_cast<uint4*>(c.x), reinterpret_cast<uint4*>(c.y), lines, per); });
    char label[64];
    snprintf(label, sizeof label, "copy of %d bytes of each 256", per * 16);
    printf("%-48s %7.1f us %6.0f GB/s\n", label, ms * 1e3, 2.0 * lines * per * 16 / (ms * 1e-3) / 1e9);
  }
  // The measured variants (bench/results/2026-11-23-h100-grid-tier.md and
  // 2026-11-23-h100-forward-experiments.md): MODE bits 1
  // (no barrier wait), 2 (one piece of statistics), 8 (no merge), 16 (partials loaded first),
  // 32 (the last block to arrive merges and publishes the statistics; the others wait for it).
  runPipe<16, 1024>(c, "pipelined: R16 T1024, three buffers");
  runPipe<16, 512>(c, "pipelined: R16 T512, three buffers");
  runPipe<8, 512, 2>(c, "pipelined: R8 T512 x2/SM, three buffers", 2);
  run<16, 8, 1, 512, 3>(c, 3, "R16 piece8 T512 NG3 P132 (loom today)");
  run<16, 8, 1, 512, 3, 32>(c, 3, "R16 piece8 T512 NG3 P132 last block merges");
  run<16, 8, 1, 512, 3, 48>(c, 3, "R16 piece8 T512 NG3 P132 last merges, loads first");
  run<16, 8, 1, 512, 3>(c, 3, "R16 piece8 T512 NG3 P132 (loom today), again");
  run<16, 8, 1, 512, 3, 32>(c, 3, "R16 piece8 T512 NG3 P132 last block merges, again");
  run<16, 16, 1, 512, 3>(c, 3, "R16 piece16 T512 NG3 P132");
  run<16, 8, 1, 512, 3, 16>(c, 3, "R16 piece8 T512 NG3 P132 loads first");
  run<16, 8, 1, 512, 3, 3>(c, 3, "R16 piece8 T512 NG3 P132 NOSTATS NOWAIT");
  run<16, 8, 1, 512, 3, 11>(c, 3, "R16 piece8 T512 NG3 P132 staged copy only");
  run<32, 8, 1, 1024, 1>(c, 1, "R32 piece8 T1024 NG1 P132");
  run<32, 8, 1, 1024, 1, 11>(c, 1, "R32 piece8 T1024 NG1 P132 staged copy only");
  run<8, 8, 1, 512, 3>(c, 6, "R8 piece8 T512 NG6 P66", 66);
  run<4, 8, 1, 256, 6>(c, 12, "R4 piece8 T256 NG12 P33", 33);
  run<16, 8, 2, 1024, 1>(c, 1, "R16 piece8 buf2 T1024 NG1 P132");
  run<16, 8, 1, 512, 3, 0, true>(c, 3, "TMA R16 T512 NG3 P132 (bulk copy per line)");
  run<16, 0, 1, 512, 3, 0, true>(c, 3, "TMA2D R16 T512 NG3 P132 (tensor boxes)");
  return 0;
}
