#include <chrono>
#include <cstdio>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "args.h"
#include "base/error.h"
#include "commands.h"
#include "io/cact_archive.h"
#include "io/cact_checksum.h"
#include "kv/budget.h"

namespace needle::cli {
namespace {

std::string Shape(const TensorRecord& r) {
  std::string s = "[";
  for (uint32_t i = 0; i < r.ndim && i < 4; ++i) s += (i ? ", " : "") + std::to_string(r.shape[i]);
  return s + "]";
}

std::string BitsName(const TensorRecord& r) {
  if (r.dtype != static_cast<uint8_t>(DType::kCQ)) return "-";
  return r.bits == kTernaryBits ? "1.58" : std::to_string(r.bits);
}

std::string Grouped(uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

std::string Join(const std::vector<uint32_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

int RunInspect(int argc, char** argv) {
  Args args("inspect", "FILE.cact [--json] [--summary] [--verify]",
            "Validates the archive completely (its payload checksum too, when it carries\n"
            "one), then shows its geometry, the KV budget and effective window, every\n"
            "tensor (dtype, shape, bits, bytes) and bytes per family.",
            {{"json", "", "print one JSON object instead of text"},
             {"summary", "", "omit the per-tensor table"},
             {"verify", "", "require a payload checksum: exit 1 when the file has none (a corrupt one always fails, exit 2)"}});
  if (!args.Parse(argc, argv)) return 0;
  if (args.positionals().size() != 1) throw Error(ErrorCode::kInvalidArgument, "inspect: expected exactly one archive path (see --help)");
  const std::string path = args.positionals()[0];
  const CactArchive a = CactArchive::Open(path);
  const CactHeader& h = a.header();
  const ModelConfig& c = a.config();
  const uint64_t per_pos = KvBytesPerPosition(c);
  const uint32_t budget = budget_window(c), effective = effective_window(c);

  std::map<std::string, uint64_t> family_bytes;
  uint64_t params = 0;
  for (size_t i = 0; i < a.num_tensors(); ++i) {
    const TensorView v = a.tensor(i);
    family_bytes[TensorFamilyName(v.spec->family)] += v.record->nbytes;
    params += v.spec->NumElements();
  }
  std::vector<std::string> heads;
  for (const auto& hd : a.layout().heads) heads.push_back(hd.spec.kind == HeadKind::kContrastive ? "contrastive" : "confidence");
  const uint64_t total = a.bytes().size();
  // The checksum was verified when the file was opened; timed again here so
  // the cost of that check is visible.
  double checksum_ms = 0;
  if (a.checksum()) {
    const auto t0 = std::chrono::steady_clock::now();
    const uint64_t again = PayloadChecksum(a.bytes().first(total - kChecksumTrailerBytes));
    checksum_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (again != *a.checksum()) throw Error(ErrorCode::kInternal, "inspect: the checksum changed between two reads");
  }
  char checksum_hex[24] = "";
  if (a.checksum()) std::snprintf(checksum_hex, sizeof checksum_hex, "0x%016llx", static_cast<unsigned long long>(*a.checksum()));
  const int verify_rc = args.Has("verify") && !a.checksum() ? 1 : 0;

  if (args.Has("json")) {
    nlohmann::json j;
    j["file"] = path;
    j["bytes"] = total;
    j["num_tensors"] = a.num_tensors();
    j["parameters"] = params;
    j["geometry"] = {{"vocab", h.vocab}, {"d_model", h.d_model}, {"num_heads", h.num_heads},
                     {"num_kv_heads", h.num_kv_heads}, {"head_dim", h.head_dim}, {"num_layers", h.num_layers},
                     {"max_seq_len", h.max_seq_len}, {"hada_n", h.hada_n}, {"mhc_lanes", h.mhc_lanes},
                     {"rope_theta", h.rope_theta}, {"engram_orders", c.engram_orders},
                     {"engram_heads_per_order", c.engram_heads_per_order()},
                     {"engram_tables", h.num_engram_tables}, {"engram_slots", h.engram_slots},
                     {"engram_sub_dim", h.engram_sub_dim}, {"engram_taps", h.engram_conv_taps},
                     {"engram_dilation", h.engram_conv_dilation}, {"engram_sites", c.engram_layers}};
    j["kv"] = {{"kv_bits", h.kv_bits}, {"bytes_per_position", per_pos}, {"budget_window", budget},
               {"header_kv_window", h.kv_window}, {"effective_window", effective}};
    j["heads"] = heads;
    j["tokenizer"] = {{"pieces", a.tokenizer().pieces.size()}, {"byte_fallback", a.tokenizer().byte_fallback},
                      {"add_dummy_prefix", a.tokenizer().add_dummy_prefix}};
    j["family_bytes"] = family_bytes;
    j["checksum"] = a.checksum() ? nlohmann::json{{"value", checksum_hex}, {"verified", true}, {"ms", checksum_ms}}
                                 : nlohmann::json(nullptr);
    if (!args.Has("summary")) {
      nlohmann::json ts = nlohmann::json::array();
      for (size_t i = 0; i < a.num_tensors(); ++i) {
        const TensorView v = a.tensor(i);
        const TensorRecord& r = *v.record;
        std::vector<uint32_t> shape(r.shape, r.shape + r.ndim);
        ts.push_back({{"index", i}, {"name", v.spec->name}, {"dtype", DTypeName(static_cast<DType>(r.dtype))},
                      {"shape", shape}, {"bits", r.dtype == 3 ? nlohmann::json(r.bits) : nlohmann::json(nullptr)},
                      {"offset", r.offset}, {"bytes", r.nbytes}});
      }
      j["tensors"] = ts;
    }
    std::printf("%s\n", j.dump(1).c_str());
    return verify_rc;
  }

  std::printf("%s: %s bytes (%.2f MB), %zu tensors, %.2fM parameters\n", path.c_str(), Grouped(total).c_str(),
              total / 1e6, a.num_tensors(), params / 1e6);
  std::printf("geometry:  vocab %u, d_model %u, %u layers, %u heads (%u kv, head_dim %u), max_seq_len %u,\n"
              "           hada_n %u, mhc lanes %u, rope_theta %g\n",
              h.vocab, h.d_model, h.num_layers, h.num_heads, h.num_kv_heads, h.head_dim, h.max_seq_len, h.hada_n,
              h.mhc_lanes, h.rope_theta);
  std::printf("engram:    orders %s, %u tables x %u slots (sub_dim %u), taps %u, dilation %u, sites %s\n",
              Join(c.engram_orders).c_str(), h.num_engram_tables, h.engram_slots, h.engram_sub_dim,
              h.engram_conv_taps, h.engram_conv_dilation, Join(c.engram_layers).c_str());
  std::printf("kv cache:  int%u K/V, %s bytes/position, budget window %u, header kv_window %u, effective window %u\n",
              h.kv_bits, Grouped(per_pos).c_str(), budget, h.kv_window, effective);
  std::string hs;
  for (const auto& s : heads) hs += (hs.empty() ? "" : ", ") + s;
  std::printf("heads:     %s\n", hs.empty() ? "none" : hs.c_str());
  if (a.checksum()) {
    std::printf("checksum:  %s, verified (%.2f MB in %.2f ms)\n", checksum_hex, total / 1e6, checksum_ms);
  } else {
    std::printf("checksum:  none (written before checksums, or by another exporter); the structure is validated\n");
  }
  std::printf("tokenizer: %zu pieces, byte_fallback %s, add_dummy_prefix %s\n", a.tokenizer().pieces.size(),
              a.tokenizer().byte_fallback ? "on" : "off", a.tokenizer().add_dummy_prefix ? "on" : "off");
  if (!args.Has("summary")) {
    std::printf("\n%5s  %-28s %-5s %-14s %5s %12s\n", "#", "tensor", "dtype", "shape", "bits", "bytes");
    for (size_t i = 0; i < a.num_tensors(); ++i) {
      const TensorView v = a.tensor(i);
      const TensorRecord& r = *v.record;
      std::printf("%5zu  %-28s %-5s %-14s %5s %12s\n", i, v.spec->name.c_str(), DTypeName(static_cast<DType>(r.dtype)),
                  Shape(r).c_str(), BitsName(r).c_str(), Grouped(r.nbytes).c_str());
    }
  }
  std::printf("\nbytes per family:\n");
  for (const auto& [name, b] : family_bytes) {
    std::printf("  %-14s %12s  %5.1f%%\n", name.c_str(), Grouped(b).c_str(), 100.0 * b / total);
  }
  std::printf("  %-14s %12s  (header, codebook, directory, alignment)\n", "overhead",
              Grouped(total - [&] { uint64_t s = 0; for (auto& kv : family_bytes) s += kv.second; return s; }()).c_str());
  std::printf("  %-14s %12s\n", "total", Grouped(total).c_str());
  if (verify_rc) std::fprintf(stderr, "inspect --verify: %s carries no payload checksum\n", path.c_str());
  return verify_rc;
}

}  // namespace needle::cli
