#include "quant/cq.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numbers>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/fp16.h"
#include "quant/codebook.h"
#include "quant/hadamard.h"

namespace needle {
namespace {

// Portable N(0, 1) source: splitmix64 + Box–Muller (std::normal_distribution
// differs between standard libraries).
class Gaussian {
 public:
  explicit Gaussian(uint64_t seed) : state_(seed) {}
  double Uniform() {  // (0, 1)
    return (static_cast<double>(Next() >> 11) + 0.5) / 9007199254740992.0;
  }
  float operator()() {
    if (has_spare_) {
      has_spare_ = false;
      return static_cast<float>(spare_);
    }
    const double r = std::sqrt(-2.0 * std::log(Uniform()));
    const double t = 2.0 * std::numbers::pi * Uniform();
    spare_ = r * std::sin(t);
    has_spare_ = true;
    return static_cast<float>(r * std::cos(t));
  }

 private:
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t state_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

std::vector<float> GaussianMatrix(size_t n, uint64_t seed, float scale = 1.0f) {
  Gaussian g(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = scale * g();
  return v;
}

const std::array<float, kCodebookLen>& Codebook() {
  static const auto cb = ComputeHeaderCodebook(static_cast<int>(kCqGroup));
  return cb;
}

struct Quantized {
  std::vector<uint8_t> blob;
  CqMatrixView view;
};

Quantized Quantize(const std::vector<float>& w, uint32_t rows, uint32_t in, uint32_t bits) {
  Quantized q;
  q.blob.assign(CqBlobBytes(rows, in, bits), 0xCD);  // junk: every byte must be written
  CqQuantize(w.data(), rows, in, bits, Codebook(), q.blob.data());
  q.view = MakeCqMatrixView(q.blob.data(), rows, in, bits, Codebook());
  return q;
}

std::vector<uint8_t> RowCodes(const CqMatrixView& m, uint32_t row) {
  std::vector<uint8_t> codes(CqPaddedIn(m.in));
  UnpackCodes(m.codes + row * CqRowBytes(m.in, m.bits), codes.size(), CqFieldBits(m.bits), codes.data());
  return codes;
}

std::string BitsName(uint32_t bits) { return bits == kTernaryBits ? "ternary" : std::to_string(bits) + "bit"; }

// ---- sizes and levels ---------------------------------------------------------------

TEST(Cq, BlobSizes) {
  EXPECT_EQ(CqPaddedIn(1), 128u);
  EXPECT_EQ(CqPaddedIn(128), 128u);
  EXPECT_EQ(CqPaddedIn(129), 256u);
  EXPECT_EQ(CqRowBytes(96, 2), 32u);
  EXPECT_EQ(CqRowBytes(96, 3), 48u);
  EXPECT_EQ(CqRowBytes(300, 4), 192u);
  EXPECT_EQ(CqRowBytes(300, kTernaryBits), 96u);  // 2-bit fields
  EXPECT_EQ(CqBlobBytes(10, 300, 3), 10u * 144 + 10u * 3 * 2);
}

TEST(Cq, LevelsFromHeaderCodebook) {
  const auto& cb = Codebook();
  for (uint32_t bits : {2u, 3u, 4u}) {
    const CqLevels l = MakeCqLevels(bits, cb);
    ASSERT_EQ(l.count, 1u << bits);
    for (uint32_t i = 0; i < l.count; ++i) EXPECT_EQ(l.value[i], cb[CodebookOffset(bits) + i]);
  }
  const CqLevels t = MakeCqLevels(kTernaryBits, {});  // ternary needs no stored codebook
  const float c = static_cast<float>(kTernaryLevel / std::sqrt(128.0));
  ASSERT_EQ(t.count, 4u);
  EXPECT_EQ(t.value[0], 0.0f);
  EXPECT_EQ(t.value[1], c);
  EXPECT_EQ(t.value[2], -2.0f * c);
  EXPECT_EQ(t.value[3], -c);
}

TEST(Cq, BadBitsThrow) {
  const auto& cb = Codebook();
  for (uint32_t bits : {0u, 1u, 6u, 8u, 16u}) {
    EXPECT_FALSE(IsValidCqBits(bits));
    EXPECT_THROW(MakeCqLevels(bits, cb), Error) << bits;
    try {
      MakeCqLevels(bits, cb);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    }
  }
  std::vector<float> w(128, 1.0f);
  std::vector<uint8_t> blob(1024);
  EXPECT_THROW(CqQuantize(w.data(), 1, 128, 7, cb, blob.data()), Error);
  EXPECT_THROW(MakeCqMatrixView(blob.data(), 1, 128, 1, cb), Error);
  // A codebook too short for the width.
  const std::span<const float> short_cb(cb.data(), 12);
  EXPECT_NO_THROW(MakeCqLevels(3, short_cb));
  EXPECT_THROW(MakeCqLevels(4, short_cb), Error);
  EXPECT_THROW(MakeCqLevels(2, std::span<const float>()), Error);
  EXPECT_THROW(PackCodes(blob.data(), 1, 9, blob.data()), Error);
}

// ---- packing ----------------------------------------------------------------------

TEST(CqPacking, ThreeBitLayoutByHand) {
  // Value of the stream: 1 | 2<<3 | 3<<6 | 4<<9 | 5<<12 | 6<<15 | 7<<18 | 0<<21 = 0x1F58D1.
  //   byte0 = f2.lo2 (11) f1 (010) f0 (001) = 0b11010001 = 0xD1
  //   byte1 = f5.lo1 (0) f4 (101) f3 (100) f2.hi1 (0) = 0b01011000 = 0x58
  //   byte2 = f7 (000) f6 (111) f5.hi2 (11)            = 0b00011111 = 0x1F
  const uint8_t fields[8] = {1, 2, 3, 4, 5, 6, 7, 0};
  uint8_t packed[3] = {0xFF, 0xFF, 0xFF};
  PackCodes(fields, 8, 3, packed);
  EXPECT_EQ(packed[0], 0xD1);
  EXPECT_EQ(packed[1], 0x58);
  EXPECT_EQ(packed[2], 0x1F);
  uint8_t back[8];
  UnpackCodes(packed, 8, 3, back);
  EXPECT_EQ(0, std::memcmp(back, fields, 8));
}

TEST(CqPacking, TwoAndFourBitLayoutByHand) {
  const uint8_t f2[8] = {1, 2, 3, 0, 3, 0, 1, 2};
  uint8_t p2[2] = {0xFF, 0xFF};
  PackCodes(f2, 8, 2, p2);
  EXPECT_EQ(p2[0], 0x39);  // 00 11 10 01
  EXPECT_EQ(p2[1], 0x93);  // 10 01 00 11
  const uint8_t f4[3] = {0xA, 0x3, 0x7};
  uint8_t p4[2] = {0xFF, 0xFF};
  PackCodes(f4, 3, 4, p4);
  EXPECT_EQ(p4[0], 0x3A);  // low nibble = even column
  EXPECT_EQ(p4[1], 0x07);  // trailing nibble zeroed
  uint8_t b4[3];
  UnpackCodes(p4, 3, 4, b4);
  EXPECT_EQ(0, std::memcmp(b4, f4, 3));
}

TEST(CqPacking, RoundTripEveryWidthAndZeroedTail) {
  for (uint32_t fb = 1; fb <= 8; ++fb) {
    for (size_t n : {1u, 5u, 7u, 13u, 128u, 301u}) {
      std::vector<uint8_t> fields(n);
      uint64_t s = 1234 + fb * 100 + n;
      for (auto& f : fields) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        f = static_cast<uint8_t>((s >> 33) & ((1u << fb) - 1));
      }
      const size_t nbytes = (n * fb + 7) / 8;
      std::vector<uint8_t> packed(nbytes + 1, 0xFF);
      PackCodes(fields.data(), n, fb, packed.data());
      EXPECT_EQ(packed[nbytes], 0xFF) << "wrote past the end, fb=" << fb << " n=" << n;
      const size_t used = n * fb % 8;
      if (used != 0) {
        EXPECT_EQ(packed[nbytes - 1] >> used, 0) << "tail not zero, fb=" << fb << " n=" << n;
      }
      std::vector<uint8_t> back(n);
      UnpackCodes(packed.data(), n, fb, back.data());
      EXPECT_EQ(back, fields) << "fb=" << fb << " n=" << n;
      // Bit k*fb + j of the stream is bit j of field k.
      for (size_t k = 0; k < n; ++k) {
        for (uint32_t j = 0; j < fb; ++j) {
          const size_t bit = k * fb + j;
          ASSERT_EQ((packed[bit / 8] >> (bit % 8)) & 1, (fields[k] >> j) & 1);
        }
      }
    }
  }
}

// ---- quantization quality ---------------------------------------------------------

TEST(CqQuality, RelativeMseOnGaussianMatrices) {
  const uint32_t rows = 256, in = 1024;
  const std::vector<float> w = GaussianMatrix(size_t{rows} * in, 42, 0.02f);
  struct Band {
    uint32_t bits;
    double lo, hi;
  };
  for (const Band band : {Band{2, 0.10, 0.14}, Band{3, 0.028, 0.042}, Band{4, 0.007, 0.013},
                          Band{kTernaryBits, 0.17, 0.22}}) {
    const Quantized q = Quantize(w, rows, in, band.bits);
    std::vector<float> deq(w.size());
    CqDequantize(q.view, deq.data());
    double err = 0.0, ref = 0.0;
    for (size_t i = 0; i < w.size(); ++i) {
      err += (static_cast<double>(w[i]) - deq[i]) * (static_cast<double>(w[i]) - deq[i]);
      ref += static_cast<double>(w[i]) * w[i];
    }
    const double rel = err / ref;
    std::printf("[ CQ       ] relative MSE %-7s (256x1024 Gaussian): %.5f\n", BitsName(band.bits).c_str(), rel);
    RecordProperty("rel_mse_" + BitsName(band.bits), std::to_string(rel));
    EXPECT_GE(rel, band.lo) << BitsName(band.bits);
    EXPECT_LE(rel, band.hi) << BitsName(band.bits);
  }
}

TEST(CqQuality, Deterministic) {
  const std::vector<float> w = GaussianMatrix(7 * 300, 9);
  for (uint32_t bits : {2u, 3u, 4u, kTernaryBits}) {
    EXPECT_EQ(Quantize(w, 7, 300, bits).blob, Quantize(w, 7, 300, bits).blob) << bits;
  }
}

// ---- blob layout ------------------------------------------------------------------

TEST(CqLayout, CodesThenNorms) {
  const uint32_t rows = 3, in = 300, bits = 3;
  const std::vector<float> w = GaussianMatrix(rows * in, 5);
  const Quantized q = Quantize(w, rows, in, bits);
  ASSERT_EQ(q.blob.size(), rows * 144u + rows * 3u * 2u);
  EXPECT_EQ(q.view.codes, q.blob.data());
  EXPECT_EQ(reinterpret_cast<const uint8_t*>(q.view.norms), q.blob.data() + rows * 144u);
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t g = 0; g < 3; ++g) {
      // The rotation is orthonormal: the group norm is the norm of the padded weights.
      double sq = 0.0;
      for (uint32_t k = g * 128; k < std::min(in, (g + 1) * 128); ++k) sq += double(w[r * in + k]) * w[r * in + k];
      uint16_t h;
      std::memcpy(&h, q.blob.data() + rows * 144u + 2 * (r * 3 + g), 2);
      EXPECT_NEAR(HalfToFloat(h), std::sqrt(sq), 1e-3 * std::sqrt(sq)) << r << "," << g;
    }
  }
}

TEST(CqLayout, PaddingIsZerosAndDoesNotLeak) {
  const uint32_t rows = 4, in = 200, in_pad = 256;
  const std::vector<float> w = GaussianMatrix(rows * in, 77);
  std::vector<float> padded(rows * in_pad, 0.0f);
  for (uint32_t r = 0; r < rows; ++r) std::copy(&w[r * in], &w[r * in] + in, &padded[r * in_pad]);
  for (uint32_t bits : {2u, 3u, 4u, kTernaryBits}) {
    const Quantized q = Quantize(w, rows, in, bits);
    const Quantized qp = Quantize(padded, rows, in_pad, bits);
    ASSERT_EQ(q.blob.size(), CqBlobBytes(rows, in, bits));
    EXPECT_EQ(q.blob, qp.blob) << "padding must be zeros, bits=" << bits;  // identical layout too

    // Dequantizing writes exactly `in` values per row; the padded tail is dropped.
    const float sentinel = 12345.0f;
    std::vector<float> out(rows * in + 64, sentinel);
    CqDequantize(q.view, out.data());
    for (size_t i = rows * in; i < out.size(); ++i) ASSERT_EQ(out[i], sentinel);
    std::vector<float> full(rows * in_pad);
    CqDequantize(qp.view, full.data());
    for (uint32_t r = 0; r < rows; ++r) {
      std::vector<float> row(in + 8, sentinel);
      CqDequantizeRow(q.view, r, row.data());
      for (uint32_t k = 0; k < in; ++k) {
        ASSERT_EQ(row[k], full[r * in_pad + k]);
        ASSERT_EQ(out[r * in + k], row[k]);
      }
      for (uint32_t k = in; k < in + 8; ++k) ASSERT_EQ(row[k], sentinel);
    }
  }
}

TEST(CqLayout, ZeroGroup) {
  const uint32_t in = 256;
  std::vector<float> w(in, 0.0f);
  for (uint32_t k = 128; k < 256; ++k) w[k] = 0.01f * static_cast<float>(k % 7) - 0.03f;
  for (uint32_t bits : {2u, 3u, 4u, kTernaryBits}) {
    const Quantized q = Quantize(w, 1, in, bits);
    EXPECT_EQ(HalfToFloat(q.view.norms[0]), 0.0f);
    const auto codes = RowCodes(q.view, 0);
    for (uint32_t k = 0; k < 128; ++k) {
      float best = INFINITY;  // the level nearest 0
      for (uint32_t i = 0; i < q.view.levels.count; ++i) {
        if (bits == kTernaryBits && i == 2) continue;
        best = std::min(best, std::fabs(q.view.levels.value[i]));
      }
      ASSERT_EQ(std::fabs(q.view.levels.value[codes[k]]), best);
    }
    std::vector<float> out(in);
    CqDequantizeRow(q.view, 0, out.data());
    for (uint32_t k = 0; k < 128; ++k) ASSERT_EQ(out[k], 0.0f);
  }
}

// ---- codes are the nearest level ------------------------------------------------------

TEST(CqCodes, NearestLevelToNormalisedRotation) {
  const uint32_t rows = 5, in = 384;
  const std::vector<float> w = GaussianMatrix(rows * in, 2024);
  for (uint32_t bits : {2u, 3u, 4u, kTernaryBits}) {
    const Quantized q = Quantize(w, rows, in, bits);
    const CqLevels& lv = q.view.levels;
    for (uint32_t r = 0; r < rows; ++r) {
      const auto codes = RowCodes(q.view, r);
      for (uint32_t g = 0; g < 3; ++g) {
        std::vector<float> rot(&w[r * in + g * 128], &w[r * in + g * 128] + 128);
        FastWalshHadamard(rot.data(), 128);
        double sq = 0.0;
        for (float v : rot) sq += double(v) * v;
        const double norm = std::sqrt(sq);
        for (uint32_t k = 0; k < 128; ++k) {
          const double u = rot[k] / norm;
          const uint8_t code = codes[g * 128 + k];
          if (bits == kTernaryBits) {
            ASSERT_NE(code, 2);
          }
          for (uint32_t i = 0; i < lv.count; ++i) {
            if (bits == kTernaryBits && i == 2) continue;
            ASSERT_LE(std::fabs(u - lv.value[code]), std::fabs(u - lv.value[i]) + 1e-6)
                << "bits=" << bits << " row=" << r << " col=" << g * 128 + k;
          }
        }
      }
    }
  }
}

TEST(CqTernary, CodesAreMinusOneZeroPlusOne) {
  const std::vector<float> w = GaussianMatrix(16 * 512, 31);
  const Quantized q = Quantize(w, 16, 512, kTernaryBits);
  size_t histogram[4] = {0, 0, 0, 0};
  for (uint32_t r = 0; r < 16; ++r)
    for (uint8_t c : RowCodes(q.view, r)) ++histogram[c];
  EXPECT_EQ(histogram[2], 0u);  // -2 is never written
  EXPECT_GT(histogram[0], 0u);
  EXPECT_GT(histogram[1], 0u);
  EXPECT_GT(histogram[3], 0u);
  // Sign extension of the 2-bit field gives the level multiplier.
  const float c = static_cast<float>(kTernaryLevel / std::sqrt(128.0));
  for (uint8_t code : {0, 1, 2, 3}) {
    const int multiplier = code >= 2 ? static_cast<int>(code) - 4 : code;
    EXPECT_EQ(q.view.levels.value[code], static_cast<float>(multiplier) * c);
  }
}

TEST(CqTernary, HandMadeGroup) {
  // Choose the rotated group r directly, then w = r · W (W is its own inverse).
  // r = (+1, -1, +0.01, -0.01, +0.2, -0.2, 0, ...): ||r|| = sqrt(2.0802) ≈ 1.44229,
  // u = ±0.6933, ±0.0069, ±0.1387, 0; the ternary levels are ±c/sqrt(128) = ±0.10820,
  // midpoints ±0.05410: codes 1, 3, 0, 0, 1, 3, then 0 for the rest.
  std::vector<float> r(128, 0.0f);
  const float head[6] = {1.0f, -1.0f, 0.01f, -0.01f, 0.2f, -0.2f};
  std::copy(head, head + 6, r.begin());
  std::vector<float> w = r;
  FastWalshHadamard(w.data(), 128);
  const Quantized q = Quantize(w, 1, 128, kTernaryBits);
  const auto codes = RowCodes(q.view, 0);
  const uint8_t expect_head[6] = {1, 3, 0, 0, 1, 3};
  for (int k = 0; k < 6; ++k) EXPECT_EQ(codes[k], expect_head[k]) << k;
  for (int k = 6; k < 128; ++k) EXPECT_EQ(codes[k], 0) << k;
  // Packed: fields (1, 3, 0, 0) -> 0b00001101 = 0x0D; (1, 3, 0, 0) again for columns 4..7.
  EXPECT_EQ(q.blob[0], 0x0D);
  EXPECT_EQ(q.blob[1], 0x0D);
  for (int b = 2; b < 32; ++b) EXPECT_EQ(q.blob[b], 0);
  const float norm = HalfToFloat(q.view.norms[0]);
  EXPECT_EQ(q.view.norms[0], FloatToHalf(std::sqrt(2.0802f)));
  // Reconstruction with the stored fp16 norm: w = (level * norm) · W.
  const float c = static_cast<float>(kTernaryLevel / std::sqrt(128.0));
  std::vector<float> expect(128, 0.0f);
  expect[0] = c * norm, expect[1] = -c * norm, expect[4] = c * norm, expect[5] = -c * norm;
  FastWalshHadamard(expect.data(), 128);
  std::vector<float> out(128);
  CqDequantizeRow(q.view, 0, out.data());
  for (int k = 0; k < 128; ++k) EXPECT_FLOAT_EQ(out[k], expect[k]) << k;
}

// ---- dot products on the packed form --------------------------------------------------

TEST(CqDot, PackedDotEqualsDotWithDequantizedRow) {
  const uint32_t rows = 6;
  for (uint32_t in : {1u, 96u, 127u, 128u, 129u, 300u, 1000u}) {
    const std::vector<float> w = GaussianMatrix(size_t{rows} * in, 1000 + in);
    const std::vector<float> x = GaussianMatrix(in, 5000 + in);
    std::vector<float> x_rot(CqPaddedIn(in), -1.0f);
    CqRotateActivation(x.data(), in, x_rot.data());
    for (uint32_t bits : {2u, 3u, 4u, kTernaryBits}) {
      const Quantized q = Quantize(w, rows, in, bits);
      std::vector<float> row(in);
      for (uint32_t r = 0; r < rows; ++r) {
        CqDequantizeRow(q.view, r, row.data());
        double expect = 0.0, xx = 0.0, ww = 0.0;
        for (uint32_t k = 0; k < in; ++k) {
          expect += double(x[k]) * row[k];
          xx += double(x[k]) * x[k];
          ww += double(row[k]) * row[k];
        }
        const float got = CqDotRowReference(q.view, r, x_rot.data());
        // Relative to the larger of |x·w| and ||x||·||w|| (a dot near zero is all cancellation).
        const double scale = std::max(std::fabs(expect), std::sqrt(xx * ww));
        ASSERT_NEAR(got, expect, 1e-5 * scale) << "in=" << in << " bits=" << bits << " row=" << r;
      }
    }
  }
}

TEST(CqDot, RotateActivationPadsAndRotates) {
  const uint32_t in = 130;
  const std::vector<float> x = GaussianMatrix(in, 3);
  std::vector<float> x_rot(256, 99.0f);
  CqRotateActivation(x.data(), in, x_rot.data());
  std::vector<float> expect(256, 0.0f);
  std::copy(x.begin(), x.end(), expect.begin());
  FastWalshHadamard(expect.data(), 128);
  FastWalshHadamard(expect.data() + 128, 128);
  for (int k = 0; k < 256; ++k) EXPECT_FLOAT_EQ(x_rot[k], expect[k]) << k;
}

// ---- speed -------------------------------------------------------------------------

TEST(CqSpeed, Quantize8192x512TwoBit) {
  const uint32_t rows = 8192, in = 512;
  const std::vector<float> w = GaussianMatrix(size_t{rows} * in, 8, 0.02f);
  std::vector<uint8_t> blob(CqBlobBytes(rows, in, 2));
  const auto start = std::chrono::steady_clock::now();
  CqQuantize(w.data(), rows, in, 2, Codebook(), blob.data());
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ CQ       ] quantize 8192x512 at 2 bits: %.1f ms (%.1f Mweights/s)\n", ms,
              rows * double(in) / ms / 1e3);
  RecordProperty("quantize_8192x512_2bit_ms", std::to_string(ms));
}

}  // namespace
}  // namespace needle
