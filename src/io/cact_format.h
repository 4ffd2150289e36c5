// The on-disk layout of a `.cact` archive (SPEC §6). All little-endian.
//
//   [0, 120)              CactHeader (29 × u32, then f32 rope_theta)
//   [120, 120 + 4·cbl)    codebook: cb2[4] | cb3[8] | cb4[16] (f32)
//   then                  num_tensors × TensorRecord (44 bytes each, no names)
//   then                  blobs, each at a 64-byte aligned offset, in directory order
//
// Tensors are identified by position (see cact_layout.h); the tokenizer blob
// (RAW) is always last.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace needle {

static_assert(std::endian::native == std::endian::little, "the .cact reader maps little-endian data in place");

inline constexpr uint32_t kCactTag = 0x05E12A83;
inline constexpr uint32_t kCactAlignment = 64;
inline constexpr uint32_t kMaxEngramOrders = 4;
inline constexpr uint32_t kMaxEngramSites = 4;

struct CactHeader {
  uint32_t tag;
  uint32_t num_tensors;
  uint32_t codebook_len;
  uint32_t kv_window;  // effective window (0 = size it from the budget)
  uint32_t kv_bits;
  uint32_t vocab;
  uint32_t d_model;
  uint32_t num_heads;
  uint32_t num_kv_heads;
  uint32_t num_layers;
  uint32_t head_dim;
  uint32_t max_seq_len;
  uint32_t hada_n;  // next power of two >= d_model
  uint32_t mhc_lanes;
  uint32_t engram_slots;
  uint32_t engram_sub_dim;
  uint32_t num_engram_tables;
  uint32_t engram_conv_taps;
  uint32_t engram_conv_dilation;
  uint32_t num_engram_orders;
  uint32_t engram_orders[kMaxEngramOrders];
  uint32_t num_engram_sites;
  uint32_t engram_sites[kMaxEngramSites];
  float rope_theta;
};
static_assert(sizeof(CactHeader) == 120);

enum class DType : uint8_t { kFP16 = 1, kFP32 = 2, kCQ = 3, kRaw = 4 };
const char* DTypeName(DType t);  // "fp16", "fp32", "cq", "raw", "?"

// One directory record. On disk it is 44 packed bytes:
//   u8 dtype, u8 ndim, u16 pad, u32 shape[4], u64 offset, u64 nbytes, u32 group_size, u32 bits
// In memory it has natural alignment; Load/StoreTensorRecord convert.
inline constexpr size_t kTensorRecordBytes = 44;
struct TensorRecord {
  uint8_t dtype = 0;
  uint8_t ndim = 0;
  uint32_t shape[4] = {0, 0, 0, 0};  // unused dimensions are 0
  uint64_t offset = 0;               // from the file start, multiple of 64
  uint64_t nbytes = 0;
  uint32_t group_size = 0;  // 128 for CQ, 0 otherwise
  uint32_t bits = 0;        // 2, 3, 4, 5 (ternary) for CQ, 0 otherwise
};
TensorRecord LoadTensorRecord(const uint8_t* p);          // reads 44 bytes
void StoreTensorRecord(const TensorRecord& r, uint8_t* p);  // writes 44 bytes (pad = 0)

}  // namespace needle
