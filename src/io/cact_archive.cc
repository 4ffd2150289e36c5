#include "io/cact_archive.h"

#include "io/cact_checksum.h"
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "base/error.h"
#include "base/fp16.h"

namespace needle {

const char* DTypeName(DType t) {
  switch (t) {
    case DType::kFP16: return "fp16";
    case DType::kFP32: return "fp32";
    case DType::kCQ: return "cq";
    case DType::kRaw: return "raw";
  }
  return "?";
}

TensorRecord LoadTensorRecord(const uint8_t* p) {
  TensorRecord r;
  r.dtype = p[0];
  r.ndim = p[1];
  std::memcpy(r.shape, p + 4, 16);
  std::memcpy(&r.offset, p + 20, 8);
  std::memcpy(&r.nbytes, p + 28, 8);
  std::memcpy(&r.group_size, p + 36, 4);
  std::memcpy(&r.bits, p + 40, 4);
  return r;
}

void StoreTensorRecord(const TensorRecord& r, uint8_t* p) {
  std::memset(p, 0, kTensorRecordBytes);
  p[0] = r.dtype;
  p[1] = r.ndim;
  std::memcpy(p + 4, r.shape, 16);
  std::memcpy(p + 20, &r.offset, 8);
  std::memcpy(p + 28, &r.nbytes, 8);
  std::memcpy(p + 36, &r.group_size, 4);
  std::memcpy(p + 40, &r.bits, 4);
}

namespace {

[[noreturn]] void Bad(const std::string& what) { throw Error(ErrorCode::kInvalidArchive, "archive: " + what); }

std::string ShapeString(uint32_t ndim, const uint32_t* shape) {
  std::string s = "[";
  for (uint32_t i = 0; i < ndim; ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

constexpr uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// Geometry limits keep every derived product far from integer overflow.
void CheckHeaderGeometry(const CactHeader& h) {
  auto field = [](const char* name, uint64_t v, uint64_t lo, uint64_t hi) {
    if (v < lo || v > hi) {
      Bad(std::string("header.") + name + " is " + std::to_string(v) + ", expected " + std::to_string(lo) + ".." + std::to_string(hi));
    }
  };
  field("vocab", h.vocab, 14, 1u << 24);
  field("d_model", h.d_model, 1, 1u << 16);
  field("num_heads", h.num_heads, 1, 1024);
  field("num_kv_heads", h.num_kv_heads, 1, 1024);
  field("num_layers", h.num_layers, 1, 4096);
  field("max_seq_len", h.max_seq_len, 1, 1u << 24);
  field("mhc_lanes", h.mhc_lanes, 1, 16);
  field("engram_slots", h.engram_slots, 1, 1u << 24);
  field("num_engram_tables", h.num_engram_tables, 1, 256);
  field("engram_conv_taps", h.engram_conv_taps, 1, 16);
  field("engram_conv_dilation", h.engram_conv_dilation, 1, 64);
  field("num_engram_orders", h.num_engram_orders, 1, kMaxEngramOrders);
  field("num_engram_sites", h.num_engram_sites, 0, kMaxEngramSites);
  field("kv_bits", h.kv_bits, 8, 8);
  if (h.d_model % h.num_heads) Bad("header.num_heads " + std::to_string(h.num_heads) + " does not divide d_model " + std::to_string(h.d_model));
  if (h.head_dim != h.d_model / h.num_heads) Bad("header.head_dim is " + std::to_string(h.head_dim) + ", expected d_model/num_heads = " + std::to_string(h.d_model / h.num_heads));
  if (h.head_dim % 2) Bad("header.head_dim " + std::to_string(h.head_dim) + " must be even for RoPE");
  if (h.num_heads % h.num_kv_heads) Bad("header.num_kv_heads " + std::to_string(h.num_kv_heads) + " does not divide num_heads " + std::to_string(h.num_heads));
  uint32_t m = 1;
  while (m < h.d_model) m <<= 1;
  if (h.hada_n != m) Bad("header.hada_n is " + std::to_string(h.hada_n) + ", expected the next power of two >= d_model, " + std::to_string(m));
  uint32_t max_order = 0;
  for (uint32_t i = 0; i < kMaxEngramOrders; ++i) {
    const uint32_t o = h.engram_orders[i];
    if (i < h.num_engram_orders) {
      if (o < 1 || o > 8) Bad("header.engram_orders[" + std::to_string(i) + "] is " + std::to_string(o) + ", expected 1..8");
      max_order = std::max(max_order, o);
    } else if (o != 0) {
      Bad("header.engram_orders[" + std::to_string(i) + "] is " + std::to_string(o) + " beyond num_engram_orders, expected 0");
    }
  }
  for (uint32_t i = 0; i < kMaxEngramSites; ++i) {
    const uint32_t s = h.engram_sites[i];
    if (i < h.num_engram_sites) {
      if (s >= h.num_layers) Bad("header.engram_sites[" + std::to_string(i) + "] is " + std::to_string(s) + ", expected < num_layers " + std::to_string(h.num_layers));
      if (i && s <= h.engram_sites[i - 1]) Bad("header.engram_sites must be strictly increasing");
    } else if (s != 0) {
      Bad("header.engram_sites[" + std::to_string(i) + "] is " + std::to_string(s) + " beyond num_engram_sites, expected 0");
    }
  }
  if (h.num_engram_tables % h.num_engram_orders) Bad("header.num_engram_tables " + std::to_string(h.num_engram_tables) + " is not a multiple of num_engram_orders " + std::to_string(h.num_engram_orders));
  if (uint64_t(h.engram_sub_dim) * h.num_engram_tables != h.d_model) Bad("header.engram_sub_dim " + std::to_string(h.engram_sub_dim) + " x num_engram_tables " + std::to_string(h.num_engram_tables) + " != d_model " + std::to_string(h.d_model));
  if (!std::isfinite(h.rope_theta) || !(h.rope_theta > 1.0f)) Bad("header.rope_theta must be a finite value > 1");
}

ModelConfig ConfigFromHeader(const CactHeader& h) {
  ModelConfig c;
  c.vocab_size = h.vocab;
  c.d_model = h.d_model;
  c.num_heads = h.num_heads;
  c.num_kv_heads = h.num_kv_heads;
  c.num_layers = h.num_layers;
  c.max_seq_len = h.max_seq_len;
  c.rope_theta = h.rope_theta;
  c.engram_orders.assign(h.engram_orders, h.engram_orders + h.num_engram_orders);
  c.engram_heads = h.num_engram_tables / h.num_engram_orders;
  c.engram_slots = h.engram_slots;
  c.engram_layers.assign(h.engram_sites, h.engram_sites + h.num_engram_sites);
  c.mhc_lanes = h.mhc_lanes;
  c.kv_window = h.kv_window;
  c.kv_bits = h.kv_bits;
  return c;
}

uint64_t ExpectedBytes(const TensorRecord& r, const TensorSpec& s) {
  switch (static_cast<DType>(r.dtype)) {
    case DType::kFP16: return s.NumElements() * 2;
    case DType::kFP32: return s.NumElements() * 4;
    case DType::kCQ: return CqBlobBytes(s.shape[0], s.shape[1], r.bits);
    case DType::kRaw: return r.nbytes;
  }
  return 0;
}

}  // namespace

CactHeader HeaderFromConfig(const ModelConfig& c) {
  CactHeader h{};
  h.tag = kCactTag;
  h.codebook_len = kCodebookLen;
  h.kv_window = c.kv_window;
  h.kv_bits = c.kv_bits;
  h.vocab = c.vocab_size;
  h.d_model = c.d_model;
  h.num_heads = c.num_heads;
  h.num_kv_heads = c.num_kv_heads;
  h.num_layers = c.num_layers;
  h.head_dim = c.head_dim();
  h.max_seq_len = c.max_seq_len;
  h.hada_n = c.hada_n();
  h.mhc_lanes = c.mhc_lanes;
  h.engram_slots = c.engram_slots;
  h.engram_sub_dim = c.engram_sub_dim();
  h.num_engram_tables = c.num_engram_tables();
  h.engram_conv_taps = ModelConfig::kEngramTaps;
  h.engram_conv_dilation = c.engram_dilation();
  h.num_engram_orders = static_cast<uint32_t>(c.engram_orders.size());
  for (size_t i = 0; i < c.engram_orders.size() && i < kMaxEngramOrders; ++i) h.engram_orders[i] = c.engram_orders[i];
  h.num_engram_sites = static_cast<uint32_t>(c.engram_layers.size());
  for (size_t i = 0; i < c.engram_layers.size() && i < kMaxEngramSites; ++i) h.engram_sites[i] = c.engram_layers[i];
  h.rope_theta = c.rope_theta;
  return h;
}

CactArchive CactArchive::Open(const std::string& path) {
  CactArchive a;
  a.file_ = MappedFile::Map(path);
  a.Validate();
  return a;
}

CactArchive CactArchive::FromBytes(std::vector<uint8_t> bytes) {
  CactArchive a;
  a.file_ = MappedFile::Own(std::move(bytes));
  a.Validate();
  return a;
}

CactArchive CactArchive::FromStatic(std::span<const uint8_t> bytes) {
  CactArchive a;
  a.file_ = MappedFile::Borrow(bytes);
  a.Validate();
  return a;
}

void CactArchive::Validate() {
  const std::span<const uint8_t> f = file_.bytes();
  uint64_t size = f.size();
  // The payload checksum first, when the file has one: a flipped bit is named
  // as such, and no blob may reach into the trailer.
  if (const auto c = FindChecksumTrailer(f)) {
    if (c->covered != size - kChecksumTrailerBytes || c->reserved != 0) {
      Bad("checksum trailer: covers " + std::to_string(c->covered) + " bytes, but " + std::to_string(size - kChecksumTrailerBytes) +
          " precede it (a damaged trailer, or bytes added after it)");
    }
    const uint64_t computed = PayloadChecksum(f.first(c->covered));
    if (computed != c->checksum) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "payload checksum mismatch: stored 0x%016llx, computed 0x%016llx over %llu bytes (the file is corrupt)",
                    static_cast<unsigned long long>(c->checksum), static_cast<unsigned long long>(computed),
                    static_cast<unsigned long long>(c->covered));
      Bad(buf);
    }
    size = c->covered;
    checksum_ = c->checksum;
  }
  if (size < sizeof(CactHeader)) Bad("file is " + std::to_string(size) + " bytes, smaller than the 120-byte header (truncated?)");
  std::memcpy(&header_, f.data(), sizeof(CactHeader));
  const CactHeader& h = header_;
  if (h.tag != kCactTag) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "header.tag is 0x%08X, expected 0x%08X (not a .cact file)", h.tag, kCactTag);
    Bad(buf);
  }
  if (h.codebook_len != kCodebookLen) Bad("header.codebook_len is " + std::to_string(h.codebook_len) + ", expected 28 (cb2[4] | cb3[8] | cb4[16])");
  CheckHeaderGeometry(h);
  config_ = ConfigFromHeader(h);

  const uint64_t codebook_off = sizeof(CactHeader);
  const uint64_t dir_off = codebook_off + 4ull * kCodebookLen;
  if (size < dir_off) Bad("file is " + std::to_string(size) + " bytes, truncated inside the codebook");
  std::memcpy(codebook_.data(), f.data() + codebook_off, 4 * kCodebookLen);
  for (int bits : {2, 3, 4}) {
    const float* cb = codebook_.data() + CodebookOffset(bits);
    for (int k = 0; k < (1 << bits); ++k) {
      if (!std::isfinite(cb[k]) || (k && !(cb[k] > cb[k - 1]))) {
        Bad("codebook: the " + std::to_string(bits) + "-bit levels must be finite and strictly ascending (entry " + std::to_string(k) + ")");
      }
    }
  }

  // Tensor count: the core list, then optionally a manifest + 3 per head, then the tokenizer.
  const uint64_t core = 1 + 14ull * h.num_layers + 9 + 4ull * h.num_engram_sites + 1;
  if (h.num_tensors < core + 1) Bad("header.num_tensors is " + std::to_string(h.num_tensors) + ", expected at least " + std::to_string(core + 1) + " for this geometry");
  const uint64_t extra = h.num_tensors - core - 1;
  uint64_t num_heads = 0;
  if (extra) {
    if ((extra - 1) % 3 != 0 || extra - 1 == 0 || (extra - 1) / 3 > 2) {
      Bad("header.num_tensors is " + std::to_string(h.num_tensors) + ": " + std::to_string(extra) + " tensors after final_norm do not form a heads manifest plus 1-2 head triples");
    }
    num_heads = (extra - 1) / 3;
  }
  const uint64_t dir_end = dir_off + uint64_t(kTensorRecordBytes) * h.num_tensors;
  if (size < dir_end) Bad("file is " + std::to_string(size) + " bytes, truncated inside the tensor directory (needs " + std::to_string(dir_end) + ")");
  records_.resize(h.num_tensors);
  for (size_t i = 0; i < h.num_tensors; ++i) records_[i] = LoadTensorRecord(f.data() + dir_off + kTensorRecordBytes * i);

  auto check_bounds = [&](size_t i, const std::string& name) {
    const TensorRecord& r = records_[i];
    const std::string who = "tensor " + std::to_string(i) + " (" + name + ")";
    if (r.offset % kCactAlignment) Bad(who + ": offset " + std::to_string(r.offset) + " is not 64-byte aligned");
    if (r.offset < dir_end) Bad(who + ": offset " + std::to_string(r.offset) + " overlaps the header/directory (ends at " + std::to_string(dir_end) + ")");
    if (r.offset > size || r.nbytes > size - r.offset) {
      Bad(who + ": blob [" + std::to_string(r.offset) + ", +" + std::to_string(r.nbytes) + ") runs past the end of the file (" + std::to_string(size) + " bytes)");
    }
  };

  // The manifest decides the head shapes, so read it first.
  std::vector<HeadSpec> heads;
  if (num_heads) {
    const size_t mi = core;
    const TensorRecord& r = records_[mi];
    if (r.dtype != static_cast<uint8_t>(DType::kFP16) || r.ndim != 1 || r.shape[0] != num_heads || r.nbytes != 2 * num_heads) {
      Bad("tensor " + std::to_string(mi) + " (heads.manifest): expected an fp16 vector of " + std::to_string(num_heads) + " head codes");
    }
    check_bounds(mi, "heads.manifest");
    for (uint64_t k = 0; k < num_heads; ++k) {
      uint16_t v;
      std::memcpy(&v, f.data() + r.offset + 2 * k, 2);
      const float code = HalfToFloat(v);
      if (code != 1.0f && code != 2.0f) Bad("heads.manifest[" + std::to_string(k) + "] is " + std::to_string(code) + ", expected 1 (contrastive) or 2 (confidence)");
      const HeadKind kind = static_cast<HeadKind>(static_cast<uint32_t>(code));
      if (!heads.empty() && static_cast<uint32_t>(kind) <= static_cast<uint32_t>(heads.back().kind)) {
        Bad("heads.manifest: head codes must be in canonical order (1 then 2) without repeats");
      }
      // The projection's row count is the head's output width (contrastive_dim for retrieval).
      const TensorRecord& proj = records_[core + 1 + 3 * k + 1];
      HeadSpec hs = DefaultHeadSpec(kind, config_);
      if (kind == HeadKind::kContrastive) {
        if (proj.shape[0] == 0 || proj.shape[0] > 65536) Bad("tensor " + std::to_string(core + 2 + 3 * k) + " (heads.contrastive.proj): output width " + std::to_string(proj.shape[0]) + " outside 1..65536");
        hs.out = proj.shape[0];
        config_.contrastive_dim = hs.out;
      }
      heads.push_back(hs);
    }
  }
  specs_ = BuildTensorSpecs(config_, heads, &layout_);
  if (specs_.size() != h.num_tensors) Bad("internal: layout size mismatch");

  uint64_t prev_end = dir_end;
  for (size_t i = 0; i < specs_.size(); ++i) {
    const TensorSpec& s = specs_[i];
    const TensorRecord& r = records_[i];
    const std::string who = "tensor " + std::to_string(i) + " (" + s.name + ")";
    const DType dt = static_cast<DType>(r.dtype);
    switch (s.storage) {
      case TensorStorage::kQuantized:
        if (dt != DType::kCQ) Bad(who + ": dtype " + std::to_string(r.dtype) + ", expected 3 (CQ)");
        if (r.group_size != kCqGroup) Bad(who + ": group_size " + std::to_string(r.group_size) + ", expected 128");
        if (!IsValidCqBits(r.bits)) Bad(who + ": bits " + std::to_string(r.bits) + ", expected 2, 3, 4 or 5 (ternary)");
        break;
      case TensorStorage::kFloat:
        if (dt != DType::kFP16 && dt != DType::kFP32) Bad(who + ": dtype " + std::to_string(r.dtype) + ", expected 1 (FP16) or 2 (FP32)");
        if (r.group_size || r.bits) Bad(who + ": group_size/bits must be 0 for a float tensor");
        break;
      case TensorStorage::kRaw:
        if (dt != DType::kRaw) Bad(who + ": dtype " + std::to_string(r.dtype) + ", expected 4 (RAW)");
        if (r.group_size || r.bits) Bad(who + ": group_size/bits must be 0 for a raw blob");
        break;
    }
    bool shape_ok = r.ndim == s.ndim;
    for (uint32_t k = 0; k < 4 && shape_ok; ++k) shape_ok = r.shape[k] == (k < s.ndim ? s.shape[k] : 0u);
    if (!shape_ok) {
      const uint32_t nd = r.ndim <= 4 ? r.ndim : 4;
      Bad(who + ": shape " + ShapeString(nd, r.shape) + " (ndim " + std::to_string(r.ndim) + ") does not match the header geometry, expected " + ShapeString(s.ndim, s.shape));
    }
    const uint64_t want = ExpectedBytes(r, s);
    if (r.nbytes != want) Bad(who + ": nbytes " + std::to_string(r.nbytes) + ", expected " + std::to_string(want) + " for shape " + ShapeString(s.ndim, s.shape) + (dt == DType::kCQ ? " at " + std::to_string(r.bits) + " bits" : ""));
    check_bounds(i, s.name);
    if (r.offset < prev_end) Bad(who + ": offset " + std::to_string(r.offset) + " overlaps the previous blob (ends at " + std::to_string(prev_end) + ")");
    prev_end = r.offset + r.nbytes;
  }
  tokenizer_ = ParseTokenizerBlob(data(layout_.tokenizer), h.vocab);
}

std::span<const uint8_t> CactArchive::data(size_t i) const {
  const TensorRecord& r = records_[i];
  return file_.bytes().subspan(r.offset, r.nbytes);
}

CqMatrixView CactArchive::cq(size_t i) const {
  const TensorRecord& r = records_[i];
  if (r.dtype != static_cast<uint8_t>(DType::kCQ)) throw Error(ErrorCode::kInternal, "tensor " + specs_[i].name + " is not CQ");
  return MakeCqMatrixView(data(i).data(), r.shape[0], r.shape[1], r.bits, codebook_);
}

std::vector<float> CactArchive::Floats(size_t i) const {
  const TensorRecord& r = records_[i];
  const auto bytes = data(i);
  std::vector<float> out;
  if (r.dtype == static_cast<uint8_t>(DType::kFP16)) {
    out.resize(bytes.size() / 2);
    for (size_t k = 0; k < out.size(); ++k) {
      uint16_t v;
      std::memcpy(&v, bytes.data() + 2 * k, 2);
      out[k] = HalfToFloat(v);
    }
  } else if (r.dtype == static_cast<uint8_t>(DType::kFP32)) {
    out.resize(bytes.size() / 4);
    std::memcpy(out.data(), bytes.data(), out.size() * 4);
  } else {
    throw Error(ErrorCode::kInternal, "tensor " + specs_[i].name + " is not a float tensor");
  }
  return out;
}

std::vector<float> CactArchive::Dequantized(size_t i) const {
  if (records_[i].dtype != static_cast<uint8_t>(DType::kCQ)) return Floats(i);
  const CqMatrixView m = cq(i);
  std::vector<float> out(uint64_t(m.rows) * m.in);
  CqDequantize(m, out.data());
  return out;
}

std::vector<uint8_t> SerializeCact(CactHeader header, std::span<const float> codebook, std::span<const TensorBlob> tensors) {
  header.num_tensors = static_cast<uint32_t>(tensors.size());
  header.codebook_len = static_cast<uint32_t>(codebook.size());
  const uint64_t dir_off = sizeof(CactHeader) + 4ull * codebook.size();
  uint64_t pos = dir_off + uint64_t(kTensorRecordBytes) * tensors.size();
  std::vector<TensorRecord> records(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorBlob& t = tensors[i];
    TensorRecord& r = records[i];
    r.dtype = static_cast<uint8_t>(t.dtype);
    r.ndim = static_cast<uint8_t>(t.ndim);
    for (int k = 0; k < 4; ++k) r.shape[k] = t.shape[k];
    r.group_size = t.group_size;
    r.bits = t.bits;
    pos = AlignUp(pos, kCactAlignment);
    r.offset = pos;
    r.nbytes = t.bytes.size();
    pos += t.bytes.size();
  }
  std::vector<uint8_t> out(pos, 0);
  std::memcpy(out.data(), &header, sizeof header);
  std::memcpy(out.data() + sizeof header, codebook.data(), 4 * codebook.size());
  for (size_t i = 0; i < records.size(); ++i) StoreTensorRecord(records[i], out.data() + dir_off + kTensorRecordBytes * i);
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!tensors[i].bytes.empty()) std::memcpy(out.data() + records[i].offset, tensors[i].bytes.data(), tensors[i].bytes.size());
  }
  return out;
}

std::vector<TensorBlob> BlobsOf(const CactArchive& a) {
  std::vector<TensorBlob> blobs;
  for (size_t i = 0; i < a.num_tensors(); ++i) {
    const TensorView v = a.tensor(i);
    const TensorRecord& r = *v.record;
    blobs.push_back({static_cast<DType>(r.dtype), r.ndim, {r.shape[0], r.shape[1], r.shape[2], r.shape[3]}, r.group_size, r.bits, v.data});
  }
  return blobs;
}

void WriteFileAtomically(const std::string& path, std::span<const uint8_t> bytes) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(ErrorCode::kIo, "cannot write '" + tmp + "'");
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      throw Error(ErrorCode::kIo, "write to '" + tmp + "' failed (disk full?)");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error(ErrorCode::kIo, "cannot rename '" + tmp + "' to '" + path + "'");
  }
}

}  // namespace needle
