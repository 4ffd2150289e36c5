// AVX3_DL (AVX-512 with VNNI) attention kernels, included by attention.cc
// inside its per-target namespace only where HWY_TARGET == HWY_AVX3_DL (no
// include guard: Highway's per-target inclusion).
//
// Decode (AttendGroupVnni): one GQA group's queries against the int8 cache,
// every product in integers.
//  - Scores: the queries arrive on the int8 grid (SnapToKvGrid), so each
//    32-value group's dot product with a key is an exact integer. vpdpbusd
//    multiplies unsigned by signed bytes: the key bytes are offset by 128
//    (xor 0x80) and 128 * sum(q) is taken off up front. Sixteen keys go
//    together and their partial sums are reduced by a transpose tree, so a
//    vector of 16 lanes ends holding 16 keys' sums: no per-key horizontal sum.
//  - Values: out[h] = sum_j p[h][j] * vs[j] * v[j] / sum[h]. The weights
//    p * vs (non-negative) are scaled to a 30-bit integer W and split into two
//    int16 halves, W = hi * 2^15 + lo; vpdpwssd multiplies pairs of keys' int8
//    values (widened to int16) by both halves. The result is W's products to
//    float precision (2^-24 of each weight), with no int8-to-float conversion
//    of the values and two keys per instruction.
// Prefill (BlockScoresVnni): the block kernel's integer scores.

// Keys per decode call the integer kernel takes (stack buffers; the int32
// sums of lo * v stay below 2^31: 1023 * 2^14 * 128 < 2^31).
inline constexpr uint32_t kVnniMaxKeys = 1008;

// Sums lanes 0-7 and lanes 8-15 of 16 keys' dpbusd results (one vector per
// key): lo[u], hi[u] are key u's two group sums.
NEEDLE_VNNI512 HWY_INLINE __m512i ReduceQuad(__m512i d0, __m512i d1, __m512i d2, __m512i d3) {
  // Block b of the result: [d0, d1, d2, d3] summed over block b's four lanes.
  const __m512i t01 = _mm512_add_epi32(_mm512_unpacklo_epi32(d0, d1), _mm512_unpackhi_epi32(d0, d1));
  const __m512i t23 = _mm512_add_epi32(_mm512_unpacklo_epi32(d2, d3), _mm512_unpackhi_epi32(d2, d3));
  return _mm512_add_epi32(_mm512_unpacklo_epi64(t01, t23), _mm512_unpackhi_epi64(t01, t23));
}

NEEDLE_VNNI512 HWY_INLINE void ReduceSixteen(const __m512i* w, __m512i* lo, __m512i* hi) {
  // w[q]: keys 4q..4q+3 per block; blocks 0+1 are the low group, 2+3 the high.
  const __m512i s01 = _mm512_add_epi32(_mm512_shuffle_i32x4(w[0], w[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                       _mm512_shuffle_i32x4(w[0], w[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512i s23 = _mm512_add_epi32(_mm512_shuffle_i32x4(w[2], w[3], _MM_SHUFFLE(2, 0, 2, 0)),
                                       _mm512_shuffle_i32x4(w[2], w[3], _MM_SHUFFLE(3, 1, 3, 1)));
  *lo = _mm512_shuffle_i32x4(s01, s23, _MM_SHUFFLE(2, 0, 2, 0));
  *hi = _mm512_shuffle_i32x4(s01, s23, _MM_SHUFFLE(3, 1, 3, 1));
}

// acc += the pairwise int16 products of x and b (vpdpwssd), updated in its
// register: written as an assignment, GCC 12 copies every accumulator of the
// values loop to a fresh register and back on each pair (2 moves per product).
NEEDLE_VNNI512 HWY_INLINE __m512i DpwssdInPlace(__m512i acc, __m512i x, __m512i b) {
  asm("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(x), "v"(b));
  return acc;
}

// Decode attention of one group; false (nothing written) when the geometry is
// not this kernel's: head_dim 64 or 128, at most kVnniMaxKeys keys.
template <uint32_t H>
NEEDLE_VNNI512 bool AttendGroupVnni(const AttentionGroupArgs& a, uint32_t total) {
  const uint32_t hd = a.head_dim, chunks = hd / 64, groups = hd / 32;
  if ((hd != 64 && hd != 128) || total > kVnniMaxKeys) return false;
  const float inv_sqrt = 1.0f / std::sqrt(static_cast<float>(hd));
  const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));

  // Queries as int8 per [set: window, sink][head][chunk], with the bias
  // correction and per-group scales (times 1/sqrt(hd)).
  __m512i qv[2][H][2], neg[2][H][2];
  float qscale[2][H][4];
  bool any_sink = false;
  for (uint32_t r = 0; r < a.num_runs; ++r) any_sink = any_sink || a.runs[r].sink;
  for (int set = 0; set < (any_sink ? 2 : 1); ++set) {
    const float* q = set ? a.q_sink : a.q_window;
    for (uint32_t h = 0; h < H; ++h) {
      alignas(64) int8_t q8[128];
      float qs[4];
      QuantizeKvRow(q + size_t(h) * hd, hd, q8, qs);
      for (uint32_t c = 0; c < chunks; ++c) {
        qv[set][h][c] = _mm512_load_si512(q8 + 64 * c);
        neg[set][h][c] = _mm512_sub_epi32(_mm512_setzero_si512(),
                                          _mm512_dpbusd_epi32(_mm512_setzero_si512(), bias, qv[set][h][c]));
      }
      for (uint32_t g = 0; g < groups; ++g) qscale[set][h][g] = qs[g] * inv_sqrt;
    }
  }

  // ---- scores, head-major (sc[h * total + j]); the V rows and scales gathered flat
  float* sc = a.scores;
  alignas(64) float vsf[4][kVnniMaxKeys + 16];  // [group][key]
  const int8_t* vrow[kVnniMaxKeys + 1];
  __m512 vsmax[4];
  for (uint32_t g = 0; g < groups; ++g) vsmax[g] = _mm512_setzero_ps();
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  uint32_t j = 0;
  for (uint32_t r = 0; r < a.num_runs; ++r) {
    const KvRun& run = a.runs[r];
    const int set = run.sink ? 1 : 0;
    for (uint32_t s0 = 0; s0 < run.count; s0 += 16, j += 16) {
      const uint32_t n = std::min<uint32_t>(16, run.count - s0);
      const __mmask16 valid = static_cast<__mmask16>((1u << n) - 1);
      const int8_t* k[16];
      for (uint32_t u = 0; u < 16; ++u) {  // past the run's end: its last key again (not stored)
        const uint32_t s = s0 + std::min(u, n - 1);
        k[u] = run.k + size_t(s) * a.row_stride;
        if (u < n) vrow[j + u] = run.v + size_t(s) * a.row_stride;
      }
      // The scales of 16 keys, by group: one load each where the slots'
      // scales of a group are adjacent (the cache's layout), else gathered.
      __m512 kscale[4];
      const __m512i slot = _mm512_min_epi32(_mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(s0)), lane),
                                            _mm512_set1_epi32(static_cast<int>(run.count - 1)));
      const __m512i sidx = _mm512_mullo_epi32(slot, _mm512_set1_epi32(static_cast<int>(run.scale_stride)));
      for (uint32_t g = 0; g < groups; ++g) {
        const size_t go = size_t(g) * run.scale_group_stride;
        __m512 vs;
        if (run.scale_stride == 1) {
          kscale[g] = _mm512_maskz_loadu_ps(valid, run.ks + s0 + go);
          vs = _mm512_maskz_loadu_ps(valid, run.vs + s0 + go);
        } else {
          const __m512i gi = _mm512_add_epi32(sidx, _mm512_set1_epi32(static_cast<int>(go)));
          kscale[g] = _mm512_i32gather_ps(gi, run.ks, 4);
          vs = _mm512_maskz_mov_ps(valid, _mm512_i32gather_ps(gi, run.vs, 4));
        }
        _mm512_storeu_ps(vsf[g] + j, vs);
        vsmax[g] = _mm512_max_ps(vsmax[g], vs);
      }
      __m512 score[H];
      for (uint32_t h = 0; h < H; ++h) score[h] = _mm512_setzero_ps();
      for (uint32_t c = 0; c < chunks; ++c) {
        __m512i ku[16];
        for (uint32_t u = 0; u < 16; ++u) ku[u] = _mm512_xor_si512(_mm512_loadu_si512(k[u] + 64 * c), bias);
        for (uint32_t h = 0; h < H; ++h) {
          const __m512i qh = qv[set][h][c], nh = neg[set][h][c];
          __m512i w[4];
          for (uint32_t q = 0; q < 4; ++q) {
            w[q] = ReduceQuad(_mm512_dpbusd_epi32(nh, ku[4 * q], qh), _mm512_dpbusd_epi32(nh, ku[4 * q + 1], qh),
                              _mm512_dpbusd_epi32(nh, ku[4 * q + 2], qh), _mm512_dpbusd_epi32(nh, ku[4 * q + 3], qh));
          }
          __m512i lo, hi;
          ReduceSixteen(w, &lo, &hi);
          score[h] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(lo),
                                     _mm512_mul_ps(kscale[2 * c], _mm512_set1_ps(qscale[set][h][2 * c])), score[h]);
          score[h] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(hi),
                                     _mm512_mul_ps(kscale[2 * c + 1], _mm512_set1_ps(qscale[set][h][2 * c + 1])),
                                     score[h]);
        }
      }
      for (uint32_t h = 0; h < H; ++h) {
        if (n == 16) {
          _mm512_storeu_ps(sc + size_t(h) * total + j, score[h]);
        } else {
          _mm512_mask_storeu_ps(sc + size_t(h) * total + j, valid, score[h]);
        }
      }
      j -= 16 - n;  // the next run's keys follow this run's last
    }
  }

  // ---- softmax per head (probabilities left unnormalised; 1/sum at the end)
  const hn::ScalableTag<float> df;
  float sum[H];
  for (uint32_t h = 0; h < H; ++h) {
    float* row = sc + size_t(h) * total;
    const uint32_t full = total & ~15u;
    const __mmask16 tail = static_cast<__mmask16>((1u << (total - full)) - 1);
    __m512 vmax = _mm512_set1_ps(-INFINITY);
    for (uint32_t i = 0; i < full; i += 16) vmax = _mm512_max_ps(vmax, _mm512_loadu_ps(row + i));
    if (tail) vmax = _mm512_mask_max_ps(vmax, tail, vmax, _mm512_maskz_loadu_ps(tail, row + full));
    decltype(hn::Zero(df)) mx, x;
    mx.raw = _mm512_set1_ps(_mm512_reduce_max_ps(vmax));
    __m512 vsum = _mm512_setzero_ps();
    for (uint32_t i = 0; i < full; i += 16) {
      x.raw = _mm512_loadu_ps(row + i);
      const __m512 e = hn::Exp(df, hn::Sub(x, mx)).raw;
      _mm512_storeu_ps(row + i, e);
      vsum = _mm512_add_ps(vsum, e);
    }
    if (tail) {
      x.raw = _mm512_maskz_loadu_ps(tail, row + full);
      const __m512 e = _mm512_maskz_mov_ps(tail, hn::Exp(df, hn::Sub(x, mx)).raw);
      _mm512_mask_storeu_ps(row + full, tail, e);
      vsum = _mm512_add_ps(vsum, e);
    }
    sum[h] = _mm512_reduce_add_ps(vsum);
  }

  // ---- values, two 32-value groups (64 dims) per pass for H <= 2 (16
  // independent accumulators, so the products are not bound by their
  // latency), one for more heads (the registers would spill).
  constexpr uint32_t kPass = H <= 2 ? 2 : 1;
  if (total % 2) vrow[total] = vrow[total - 1];  // paired with a zero weight
  const uint32_t pairs = (total + 1) / 2;
  // hi <= hi_max + 1 (p may round a hair above 1) keeps sum_j hi_j * v_j
  // within int32 (|v| <= 128) and every hi within int16.
  const float hi_max = std::min(32000.0f, std::floor(2147483647.0f / (128.0f * static_cast<float>(total))) - 1.0f);
  const __m512i half = _mm512_set1_epi32(1 << 14);
  const __m512i dims_lo = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
  const __m512i dims_hi = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
  // Per group of the pass and head: the weights' 15-bit halves, two keys per int32.
  alignas(64) int16_t whi[kPass][H][kVnniMaxKeys + 16], wlo[kPass][H][kVnniMaxKeys + 16];
  for (uint32_t g0 = 0; g0 < groups; g0 += kPass) {
    float scale[kPass];
    for (uint32_t e = 0; e < kPass; ++e) {
      const float vmax = _mm512_reduce_max_ps(vsmax[g0 + e]);
      scale[e] = vmax > 0.0f ? hi_max * 32768.0f / vmax : 0.0f;  // W = p * vs * scale <= hi_max * 2^15
      const __m512 vscale = _mm512_set1_ps(scale[e]);
      for (uint32_t h = 0; h < H; ++h) {
        const float* p = sc + size_t(h) * total;
        for (uint32_t i = 0; i < total; i += 16) {
          __m512 pv, vv;
          if (total - i >= 16) {
            pv = _mm512_loadu_ps(p + i), vv = _mm512_loadu_ps(vsf[g0 + e] + i);
          } else {
            const __mmask16 m = static_cast<__mmask16>((1u << (total - i)) - 1);
            pv = _mm512_maskz_loadu_ps(m, p + i), vv = _mm512_maskz_loadu_ps(m, vsf[g0 + e] + i);
          }
          const __m512 w = _mm512_mul_ps(_mm512_mul_ps(pv, vv), vscale);
          const __m512i W = _mm512_cvtps_epi32(w);
          const __m512i hi = _mm512_srai_epi32(_mm512_add_epi32(W, half), 15);
          const __m512i lo = _mm512_sub_epi32(W, _mm512_slli_epi32(hi, 15));
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(whi[e][h] + i), _mm512_cvtepi32_epi16(hi));
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(wlo[e][h] + i), _mm512_cvtepi32_epi16(lo));
        }
      }
    }
    // acc[e][h][half][x]: group g0 + e, head h, hi or lo weights, dims of x0 or x1.
    __m512i acc[kPass][H][2][2];
    for (uint32_t e = 0; e < kPass; ++e) {
      for (uint32_t h = 0; h < H; ++h) acc[e][h][0][0] = acc[e][h][0][1] = acc[e][h][1][0] = acc[e][h][1][1] = _mm512_setzero_si512();
    }
    for (uint32_t pr = 0; pr < pairs; ++pr) {
      const int8_t* ra = vrow[2 * pr] + 32 * g0;
      const int8_t* rb = vrow[2 * pr + 1] + 32 * g0;
      for (uint32_t e = 0; e < kPass; ++e) {
        // Keys 2pr, 2pr+1 interleaved per value: lanes of x0 hold dims 8k..8k+3, of x1 dims 8k+4..8k+7.
        const __m512i va = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ra + 32 * e)));
        const __m512i vb = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rb + 32 * e)));
        const __m512i x0 = _mm512_unpacklo_epi16(va, vb), x1 = _mm512_unpackhi_epi16(va, vb);
        for (uint32_t h = 0; h < H; ++h) {
          int32_t wh, wl;
          std::memcpy(&wh, whi[e][h] + 2 * pr, 4);
          std::memcpy(&wl, wlo[e][h] + 2 * pr, 4);
          const __m512i bh = _mm512_set1_epi32(wh), bl = _mm512_set1_epi32(wl);
          acc[e][h][0][0] = DpwssdInPlace(acc[e][h][0][0], x0, bh);
          acc[e][h][0][1] = DpwssdInPlace(acc[e][h][0][1], x1, bh);
          acc[e][h][1][0] = DpwssdInPlace(acc[e][h][1][0], x0, bl);
          acc[e][h][1][1] = DpwssdInPlace(acc[e][h][1][1], x1, bl);
        }
      }
    }
    for (uint32_t e = 0; e < kPass; ++e) {
      for (uint32_t h = 0; h < H; ++h) {
        const __m512 inv = _mm512_set1_ps(scale[e] > 0.0f ? 1.0f / (scale[e] * sum[h]) : 0.0f);
        const __m512 two15 = _mm512_set1_ps(32768.0f);
        const __m512 f0 = _mm512_mul_ps(
            _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[e][h][0][0]), two15, _mm512_cvtepi32_ps(acc[e][h][1][0])), inv);
        const __m512 f1 = _mm512_mul_ps(
            _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[e][h][0][1]), two15, _mm512_cvtepi32_ps(acc[e][h][1][1])), inv);
        float* o = a.out + size_t(h) * hd + 32 * (g0 + e);
        _mm512_storeu_ps(o, _mm512_permutex2var_ps(f0, dims_lo, f1));
        _mm512_storeu_ps(o + 16, _mm512_permutex2var_ps(f0, dims_hi, f1));
      }
    }
  }
  return true;
}

// Prefill: the block's query rows (16, one per lane) as int8 for BlockScoresVnni.
struct BlockQueriesQ8 {
  alignas(64) int32_t quads[kAttentionBlockMaxHeadDim / 4][kRows];  // bytes 4i..4i+3 of each row
  alignas(64) int32_t neg[kAttentionBlockMaxHeadDim / 32][kRows];   // -128 * the group's sum
  alignas(64) float scale[kAttentionBlockMaxHeadDim / 32][kRows];   // the group's scale / sqrt(hd)
};

// Rows past `rows` stay zero (they score 0 and are never written out).
inline void QuantizeBlockQueries(const float* q, uint32_t q_stride, uint32_t heads, uint32_t rows, uint32_t hd,
                                 BlockQueriesQ8* out) {
  std::memset(out, 0, sizeof(*out));
  const float inv_sqrt = 1.0f / std::sqrt(static_cast<float>(hd));
  for (uint32_t r = 0; r < rows; ++r) {
    alignas(64) int8_t q8[kAttentionBlockMaxHeadDim];
    float qs[kAttentionBlockMaxHeadDim / 32];
    QuantizeKvRow(q + size_t(r / heads) * q_stride + size_t(r % heads) * hd, hd, q8, qs);
    for (uint32_t i = 0; i < hd; i += 4) std::memcpy(&out->quads[i / 4][r], q8 + i, 4);
    for (uint32_t g = 0; g < hd / 32; ++g) {
      int32_t sum = 0;
      for (uint32_t i = g * 32; i < g * 32 + 32; ++i) sum += q8[i];
      out->neg[g][r] = -128 * sum;
      out->scale[g][r] = qs[g] * inv_sqrt;
    }
  }
}

// Scores of keys s0..s0+nk-1 of a run for the 16 rows: sc[j * kRows + row].
// Eight keys at a time, each group's eight 4-byte quads broadcast against the
// rows' quads.
NEEDLE_VNNI512 void BlockScoresVnni(const KvRun& run, uint32_t s0, uint32_t nk, uint32_t hd, uint32_t row_stride,
                                    const BlockQueriesQ8& q, float* sc) {
  alignas(64) uint8_t kb[kKeyBlock * kAttentionBlockMaxHeadDim];  // keys + 128, [key][i]
  const __m256i bias = _mm256_set1_epi8(static_cast<char>(0x80));
  for (uint32_t j = 0; j < nk; ++j) {
    const int8_t* k = run.k + size_t(s0 + j) * row_stride;
    for (uint32_t i = 0; i < hd; i += 32) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(kb + j * hd + i),
                         _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(k + i)), bias));
    }
  }
  const uint32_t groups = hd / 32;
  for (uint32_t j0 = 0; j0 < nk; j0 += 8) {
    uint32_t key[8];  // past the block's end: repeat its last key (scored, not stored)
    for (uint32_t u = 0; u < 8; ++u) key[u] = std::min(j0 + u, nk - 1);
    __m512 s[8];
    for (int u = 0; u < 8; ++u) s[u] = _mm512_setzero_ps();
    for (uint32_t g = 0; g < groups; ++g) {
      __m512i acc[8];
      const __m512i neg = _mm512_load_si512(q.neg[g]);
      for (int u = 0; u < 8; ++u) acc[u] = neg;
      for (uint32_t iq = g * 8; iq < g * 8 + 8; ++iq) {
        const __m512i qv = _mm512_load_si512(q.quads[iq]);
        for (int u = 0; u < 8; ++u) {
          int32_t kq;
          std::memcpy(&kq, kb + key[u] * hd + iq * 4, 4);
          acc[u] = _mm512_dpbusd_epi32(acc[u], _mm512_set1_epi32(kq), qv);
        }
      }
      const __m512 qs = _mm512_load_ps(q.scale[g]);
      for (int u = 0; u < 8; ++u) {
        const float ks = run.ks[size_t(s0 + key[u]) * run.scale_stride + size_t(g) * run.scale_group_stride];
        s[u] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[u]), _mm512_mul_ps(qs, _mm512_set1_ps(ks)), s[u]);
      }
    }
    for (uint32_t u = 0; u < 8 && j0 + u < nk; ++u) _mm512_store_ps(sc + (j0 + u) * kRows, s[u]);
  }
}
