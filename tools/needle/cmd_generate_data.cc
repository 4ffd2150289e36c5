#include <chrono>
#include <cstdio>
#include <fstream>

#include "args.h"
#include "base/error.h"
#include "commands.h"
#include "data/catalogue.h"  // Catalogue
#include "data/generator.h"  // Generator
#include "data/prose.h"      // WordNetGlossTexts, PackageDescriptionTexts, DrawProse
#include "data/wordnet.h"    // WordNet::kDefaultDir
#include "data/stats.h"      // DataStats

namespace needle::cli {

namespace {

// Writes `num` texts of data/prose.h as {"text"} lines.
int WriteProse(const Args& args, long long num, long long seed, const std::string& out,
               std::chrono::steady_clock::time_point t0) {
  for (const char* other : {"tools", "mix", "long-sessions", "stats", "meta"})
    if (args.Has(other)) throw Error(ErrorCode::kInvalidArgument, std::string("generate-data: --") + other + " does not apply to --prose");
  if (out.empty()) throw Error(ErrorCode::kInvalidArgument, "generate-data: --prose needs --out FILE");
  std::vector<std::string> texts = data::WordNetGlossTexts(args.Get("wordnet-dir", data::WordNet::kDefaultDir));
  const size_t glosses = texts.size();
  const std::vector<std::string> lists = args.Has("packages") ? args.GetAll("packages") : std::vector<std::string>{"/var/lib/dpkg/status"};
  for (const std::string& list : lists) {
    std::vector<std::string> more = data::PackageDescriptionTexts(list);
    texts.insert(texts.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  }
  const size_t descriptions = texts.size() - glosses;
  const std::vector<std::string> drawn = data::DrawProse(std::move(texts), static_cast<uint64_t>(num), static_cast<uint64_t>(seed));
  std::string body;
  for (const std::string& t : drawn) body += data::ojson{{"text", t}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (out == "-") {
    std::fwrite(body.data(), 1, body.size(), stdout);
  } else {
    std::ofstream file(out + ".tmp", std::ios::binary | std::ios::trunc);
    file.write(body.data(), static_cast<std::streamsize>(body.size()));
    file.close();
    if (!file || std::rename((out + ".tmp").c_str(), out.c_str()) != 0) throw Error(ErrorCode::kIo, "generate-data: cannot write " + out);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "needle generate-data: %zu prose texts (seed %lld; from %zu WordNet glosses and %zu package descriptions) -> %s in %.1f s\n",
               drawn.size(), seed, glosses, descriptions, out.c_str(), secs);
  return 0;
}

}  // namespace

int RunGenerateData(int argc, char** argv) {
  Args args("generate-data", "--num N --seed S --split train|val|test --out FILE.jsonl [flags]",
            "Generates tool-calling examples offline (SPEC §12 JSONL; sessions use the `turns`\n"
            "extension of docs/data-format.md). Deterministic for (catalogue, seed, split, N).\n"
            "The splits hold out whole phrase templates, catalogue spellings, part of the\n"
            "synthesised name space and some whole capabilities: test measures generalisation.",
            {{"num", "N", "number of examples (required)"},
             {"seed", "S", "random seed (default 0)"},
             {"split", "NAME", "train, val or test (default train)"},
             {"out", "FILE", "output JSONL ('-' = stdout); may be omitted with --stats"},
             {"tools", "FILE.json", "generate for these tool schemas (a JSON array, or {\"tools\": [...]})"},
             {"max-tools", "N", "at most N tools per example, 2-8 (default 8; 5 matches SPEC §10 retrieval)"},
             {"long-sessions", "", "every example a session with 6-14 later requests (the window slides over the earlier turns)"},
             {"stats", "", "print a summary (stderr, or stdout without --out)"},
             {"meta", "", "add a \"meta\" object per example (kind, domain, templates, paraphrases; ignored by training)"},
             {"wordnet", "P", "share of examples whose requests get WordNet synonyms/hypernyms for some\n"
                              "template words (default 0.5; 0 = the output without them, byte for byte)"},
             {"mix", "KIND=W,...", "weights of the catalogue's kinds, replacing the defaults of those named:\n"
                                   "single 47, parallel 7, refuse_offtopic 2.8, refuse_offdomain 2.8, refuse_nearmiss 3.4,\n"
                                   "refuse_enum 1.4, refuse_missing 1.3, extraction 8, session 11, invented 7, api 12"},
             {"wordnet-dir", "DIR", "WordNet's dict files (default /usr/share/wordnet; Debian: wordnet-base)"},
             {"prose", "", "general English instead of tool calls: {\"text\"} lines of WordNet's glosses and Debian's\n"
                           "package descriptions, for a language stage before the tool-calling data (data/prose.h)"},
             {"packages", "FILE", "with --prose: a file of Debian's control format to read descriptions from, repeatable\n"
                                  "(default /var/lib/dpkg/status; `apt-cache dumpavail > FILE` lists every package)", true},
             {"data", "DIR", "catalogue directory (default: $NEEDLE_DATA_DIR, else an installed copy's share/needle/data, else the source tree's data/)"}});
  if (!args.Parse(argc, argv)) return 0;
  if (!args.positionals().empty())
    throw Error(ErrorCode::kInvalidArgument, "generate-data: unexpected argument '" + args.positionals()[0] + "'");
  const long long num = args.GetInt("num", -1);
  if (num < 0) throw Error(ErrorCode::kInvalidArgument, "generate-data: --num N is required (N >= 0)");
  const long long seed = args.GetInt("seed", 0);
  if (seed < 0) throw Error(ErrorCode::kInvalidArgument, "generate-data: --seed must be >= 0");
  const data::Split split = data::ParseSplit(args.Get("split", "train"));
  const bool stats = args.Has("stats"), meta = args.Has("meta");
  const std::string out = args.Get("out");
  if (out.empty() && !stats) throw Error(ErrorCode::kInvalidArgument, "generate-data: --out FILE is required (or --stats)");

  const auto t0 = std::chrono::steady_clock::now();
  if (args.Has("prose")) return WriteProse(args, num, seed, out, t0);
  const data::Catalogue cat = data::Catalogue::Load(args.Get("data", data::DefaultDataDir()));
  data::GeneratorOptions opt;
  opt.seed = static_cast<uint64_t>(seed);
  opt.split = split;
  opt.max_tools = static_cast<int>(args.GetInt("max-tools", 8));
  if (opt.max_tools < 2 || opt.max_tools > 8) throw Error(ErrorCode::kInvalidArgument, "generate-data: --max-tools must be 2..8");
  opt.long_sessions = args.Has("long-sessions");
  opt.wordnet = args.GetDouble("wordnet", 0.5);
  opt.wordnet_dir = args.Get("wordnet-dir", data::WordNet::kDefaultDir);
  if (args.Has("mix")) opt.kind_mix = data::ParseKindMix(args.Get("mix"));
  if (args.Has("mix") && (args.Has("tools") || opt.long_sessions))
    throw Error(ErrorCode::kInvalidArgument, "generate-data: --mix weighs the catalogue's kinds; it does not apply to --tools or --long-sessions");
  if (opt.long_sessions && args.Has("tools"))
    throw Error(ErrorCode::kInvalidArgument, "generate-data: --long-sessions is for the catalogue, not --tools");
  data::Generator gen(cat, opt);
  if (args.Has("tools")) {
    const std::string path = args.Get("tools");
    data::ojson tools;
    try {
      tools = data::ojson::parse(ReadFlagFile("tools", path));
    } catch (const nlohmann::json::exception& e) {
      throw Error(ErrorCode::kInvalidJson, "generate-data: " + path + ": " + e.what());
    }
    gen.SetUserTools(tools);
  }

  std::ofstream file;
  std::FILE* sink = nullptr;
  if (out == "-") {
    sink = stdout;
  } else if (!out.empty()) {
    file.open(out + ".tmp", std::ios::binary | std::ios::trunc);
    if (!file) throw Error(ErrorCode::kIo, "generate-data: cannot write " + out);
  }
  data::DataStats st;
  std::string line;
  for (long long i = 0; i < num; ++i) {
    data::Example ex = gen.Generate(static_cast<uint64_t>(i));
    if (stats) st.Add(ex);
    if (meta) {
      data::ojson m = data::ojson::object();
      m["kind"] = ex.meta.kind;
      m["domain"] = ex.meta.domain;
      m["capabilities"] = ex.meta.caps;
      m["templates"] = ex.meta.templates;
      m["origins"] = ex.meta.origins;
      if (opt.wordnet > 0) m["paraphrases"] = ex.meta.paraphrases;
      ex.json["meta"] = m;
    }
    line = ex.json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    line += '\n';
    if (sink) std::fwrite(line.data(), 1, line.size(), sink);
    else if (file.is_open()) file.write(line.data(), static_cast<std::streamsize>(line.size()));
  }
  if (file.is_open()) {
    file.close();
    if (!file || std::rename((out + ".tmp").c_str(), out.c_str()) != 0)
      throw Error(ErrorCode::kIo, "generate-data: cannot write " + out);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (stats) {
    const std::string report = st.Report();
    std::fputs(report.c_str(), out.empty() ? stdout : stderr);
  }
  std::fprintf(stderr, "needle generate-data: %lld %s examples (seed %lld, %zu capabilities) %s%s in %.1f s\n", num,
               data::SplitName(split), seed, cat.caps.size(), out.empty() ? "" : "-> ",
               out.empty() ? "" : (out == "-" ? "stdout" : out.c_str()), secs);
  return 0;
}

}  // namespace needle::cli
