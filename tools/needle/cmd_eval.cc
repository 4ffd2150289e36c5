// needle eval: scores a model on JSONL examples (SPEC §12 + `turns`) through
// the real agent (grammar, retrieval, envelope), as a user would run it.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/session.h"
#include "args.h"
#include "bfcl.h"
#include "base/error.h"
#include "commands.h"
#include "decoding_flags.h"
#include "paired_outcomes.h"
#include "progress.h"

namespace needle::cli {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

std::string Trim(const std::string& v) {
  const size_t b = v.find_first_not_of(" \t\n\r"), e = v.find_last_not_of(" \t\n\r");
  return b == std::string::npos ? "" : v.substr(b, e - b + 1);
}

// Values as issue E compares them: numbers numerically, strings exactly after
// trimming, objects by key (order free), arrays in order.
bool SameValue(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) return a.get<double>() == b.get<double>();
  if (a.is_string() && b.is_string()) return Trim(a.get<std::string>()) == Trim(b.get<std::string>());
  if (a.is_object() && b.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto it = a.begin(); it != a.end(); ++it) {
      if (!b.contains(it.key()) || !SameValue(it.value(), b[it.key()])) return false;
    }
    return true;
  }
  if (a.is_array() && b.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!SameValue(a[i], b[i])) return false;
    }
    return true;
  }
  return a == b;
}

json CallArguments(const json& call) { return call.contains("arguments") && call["arguments"].is_object() ? call["arguments"] : json::object(); }

// Calls compared as multisets of (name, arguments).
bool SameCalls(const json& got, const json& want) {
  if (!got.is_array() || !want.is_array() || got.size() != want.size()) return false;
  std::vector<bool> used(want.size(), false);
  for (const auto& g : got) {
    bool found = false;
    for (size_t i = 0; i < want.size() && !found; ++i) {
      if (!used[i] && g.value("name", "") == want[i].value("name", "") && SameValue(CallArguments(g), CallArguments(want[i]))) used[i] = found = true;
    }
    if (!found) return false;
  }
  return true;
}

// Argument pairs right / predicted / expected, calls paired by name in order.
void CountArguments(const json& got, const json& want, uint64_t* right, uint64_t* predicted, uint64_t* expected) {
  std::vector<bool> used(want.size(), false);
  for (const auto& w : want) *expected += CallArguments(w).size();
  for (const auto& g : got) {
    const json ga = CallArguments(g);
    *predicted += ga.size();
    for (size_t i = 0; i < want.size(); ++i) {
      if (used[i] || want[i].value("name", "") != g.value("name", "")) continue;
      used[i] = true;
      const json wa = CallArguments(want[i]);
      for (auto it = ga.begin(); it != ga.end(); ++it) *right += wa.contains(it.key()) && SameValue(it.value(), wa[it.key()]);
      break;
    }
  }
}

std::vector<std::string> Names(const json& calls) {
  std::vector<std::string> n;
  for (const auto& c : calls) n.push_back(c.value("name", ""));
  std::sort(n.begin(), n.end());
  return n;
}

// What one turn got right, for the paired long-session comparison.
struct TurnOutcome {
  bool exact = false, selection = false;
};

struct Score {
  uint64_t turns = 0, exact = 0, selection = 0, valid = 0, errors = 0;
  uint64_t gold_refuse = 0, pred_refuse = 0, both_refuse = 0;
  uint64_t first_turns = 0, first_exact = 0, session_turns = 0, session_exact = 0;
  uint64_t arg_right = 0, arg_predicted = 0, arg_expected = 0;
  double conf_right = 0, conf_wrong = 0;
  uint64_t n_conf_right = 0, n_conf_wrong = 0;
  double prefill_tps = 0, decode_tps = 0, peak_ram = 0;
  // Confidence calibration against exactness (10 bins).
  uint64_t bin_n[10] = {};
  double bin_conf[10] = {}, bin_acc[10] = {};
  std::vector<std::pair<double, bool>> conf_exact;  // for the AUROC

  // exact_by_rule: the set's own judgement of the calls (BFCL's matching),
  // in place of comparing them with `want` by value.
  TurnOutcome Add(const Envelope& e, const json& want, bool first, std::optional<bool> exact_by_rule = std::nullopt) {
    ++turns;
    const json got = json::parse(e.function_calls.dump());
    const bool ok = e.success();
    const bool exact = ok && (exact_by_rule ? *exact_by_rule : SameCalls(got, want));
    this->exact += exact;
    if (first) {
      ++first_turns, first_exact += exact;
    } else {
      ++session_turns, session_exact += exact;
    }
    if (ok) ++valid; else ++errors;
    const bool selected = ok && Names(got) == Names(want);
    selection += selected;
    if (ok) CountArguments(got, want, &arg_right, &arg_predicted, &arg_expected);
    const bool gr = want.empty(), pr = ok && got.empty();
    gold_refuse += gr, pred_refuse += pr, both_refuse += gr && pr;
    prefill_tps += e.prefill_tps, decode_tps += e.decode_tps;
    peak_ram = std::max(peak_ram, e.peak_ram_mb);
    if (e.confidence) {
      (exact ? conf_right : conf_wrong) += *e.confidence;
      ++(exact ? n_conf_right : n_conf_wrong);
      const int b = std::min(9, static_cast<int>(*e.confidence * 10));
      ++bin_n[b], bin_conf[b] += *e.confidence, bin_acc[b] += exact;
      conf_exact.push_back({*e.confidence, exact});
    }
    return {exact, selected};
  }
  void Merge(const Score& o) {
    turns += o.turns, exact += o.exact, selection += o.selection, valid += o.valid, errors += o.errors;
    gold_refuse += o.gold_refuse, pred_refuse += o.pred_refuse, both_refuse += o.both_refuse;
    arg_right += o.arg_right, arg_predicted += o.arg_predicted, arg_expected += o.arg_expected;
    conf_right += o.conf_right, conf_wrong += o.conf_wrong, n_conf_right += o.n_conf_right, n_conf_wrong += o.n_conf_wrong;
    first_turns += o.first_turns, first_exact += o.first_exact, session_turns += o.session_turns, session_exact += o.session_exact;
    prefill_tps += o.prefill_tps, decode_tps += o.decode_tps, peak_ram = std::max(peak_ram, o.peak_ram);
    for (int b = 0; b < 10; ++b) bin_n[b] += o.bin_n[b], bin_conf[b] += o.bin_conf[b], bin_acc[b] += o.bin_acc[b];
    conf_exact.insert(conf_exact.end(), o.conf_exact.begin(), o.conf_exact.end());
  }
  // P(an exact turn's confidence > a wrong turn's), ties half: how well the
  // confidence ranks (ECE says how well it is scaled). -1 without both kinds.
  double Auroc() const {
    std::vector<std::pair<double, bool>> v = conf_exact;
    std::sort(v.begin(), v.end());
    double pos = 0, neg = 0, rank_sum = 0;
    for (size_t i = 0; i < v.size();) {
      size_t j = i;
      while (j < v.size() && v[j].first == v[i].first) ++j;
      const double mid = (double(i) + double(j) + 1) / 2;  // 1-based mean rank of the tie group
      for (size_t k = i; k < j; ++k) {
        if (v[k].second) rank_sum += mid, ++pos; else ++neg;
      }
      i = j;
    }
    if (pos == 0 || neg == 0) return -1;
    return (rank_sum - pos * (pos + 1) / 2) / (pos * neg);
  }
  ojson Report() const {
    auto pct = [](uint64_t a, uint64_t b) { return b ? std::round(1000.0 * a / b) / 10.0 : 0.0; };
    ojson r;
    r["turns"] = turns;
    r["exact_call"] = pct(exact, turns);
    r["exact_call_first_turn"] = pct(first_exact, first_turns);
    r["exact_call_session_turns"] = pct(session_exact, session_turns);
    r["tool_selection"] = pct(selection, turns);
    r["argument_precision"] = pct(arg_right, arg_predicted);
    r["argument_recall"] = pct(arg_right, arg_expected);
    r["refusal_precision"] = pct(both_refuse, pred_refuse);
    r["refusal_recall"] = pct(both_refuse, gold_refuse);
    r["schema_valid"] = pct(valid, turns);
    r["errors"] = errors;
    uint64_t n = 0;
    double ece = 0;
    for (int b = 0; b < 10; ++b) n += bin_n[b];
    for (int b = 0; b < 10; ++b) {
      if (bin_n[b]) ece += std::fabs(bin_conf[b] / bin_n[b] - bin_acc[b] / bin_n[b]) * bin_n[b] / double(n);
    }
    r["confidence_ece"] = n ? ojson(std::round(ece * 1000) / 1000) : ojson();
    const double auroc = Auroc();
    r["confidence_auroc"] = auroc >= 0 ? ojson(std::round(auroc * 1000) / 1000) : ojson();
    r["mean_confidence_right"] = n_conf_right ? ojson(std::round(conf_right / n_conf_right * 1000) / 1000) : ojson();
    r["mean_confidence_wrong"] = n_conf_wrong ? ojson(std::round(conf_wrong / n_conf_wrong * 1000) / 1000) : ojson();
    r["mean_prefill_tps"] = turns ? std::round(prefill_tps / turns) : 0.0;
    r["mean_decode_tps"] = turns ? std::round(decode_tps / turns) : 0.0;
    r["peak_ram_mb"] = std::round(peak_ram * 10) / 10;
    return r;
  }
};

// Case-by-case change from turn 1 to the late turn: how many cases flipped
// each way, the difference with its 95% interval, and the exact McNemar p.
ojson PairedReport(const PairedOutcomes& p) {
  double lo, hi;
  p.Interval95(&lo, &hi);
  auto r1 = [](double v) { return std::round(v * 10) / 10; };
  return ojson{{"pairs", p.pairs()},       {"both", p.both},
               {"lost", p.lost},           {"gained", p.gained},
               {"neither", p.neither},     {"difference_points", r1(p.DifferencePoints())},
               {"ci95_points", {r1(lo), r1(hi)}}, {"mcnemar_p", std::round(p.McNemarP() * 1e4) / 1e4}};
}

// BFCL ground truth by example id, from possible_answer/ beside the data file;
// none for a set that expects no call (live_irrelevance).
std::map<std::string, ojson> ReadBfclTruth(const std::string& data) {
  std::map<std::string, ojson> truth;
  if (bfcl::ExpectsNoCall(data)) return truth;
  const std::string path = bfcl::AnswerPathFor(data);
  std::ifstream in(path);
  if (!in) throw Error(ErrorCode::kIo, data + " is a BFCL file, but its ground truth '" + path + "' cannot be opened");
  size_t lineno = 0;
  for (std::string line; std::getline(in, line);) {
    ++lineno;
    if (line.empty()) continue;
    const ojson a = ojson::parse(line, nullptr, false);
    if (a.is_discarded() || !a.contains("id") || !a["id"].is_string() || !a.contains("ground_truth") || !a["ground_truth"].is_array()) {
      throw Error(ErrorCode::kInvalidJson, path + ":" + std::to_string(lineno) + ": not a ground-truth line ({\"id\", \"ground_truth\": [...]})");
    }
    truth[a["id"].get<std::string>()] = a["ground_truth"];
  }
  return truth;
}

// Earlier turns kept as a rollout's context: two windows, so the oldest token
// the scored turn can see still has its own window of context before it.
constexpr size_t kRolloutHistory = 512;

// Other traffic for the long-session check: requests that fit no tool in
// particular, answered by the model like any turn.
const char* kTraffic[] = {
    "what's on my calendar", "thanks!", "turn it up a bit", "remind me later", "how far is the station",
    "never mind", "play something relaxing", "ok do it", "what time is it in Tokyo", "cancel that",
};

}  // namespace

int RunEval(int argc, char** argv) {
  const char* summary =
      "Runs every example through the agent (prompt, grammar, retrieval, envelope) and\n"
      "scores it: exact_call (same calls, arguments compared by value; BFCL files by\n"
      "BFCL's own matching, ground truth read from possible_answer/ beside them), tool_selection\n"
      "(same tool names), refusal precision/recall, schema_valid, confidence ECE and AUROC. Session\n"
      "examples (`turns`) are played turn by turn with the gold tool results. With\n"
      "--long-session N each single-turn example is asked at turn 1 and again after N\n"
      "turns of other traffic in the same session, and the two are compared case by case\n"
      "(cases lost and gained, the difference with its 95% interval, McNemar's exact p).";
  std::vector<FlagSpec> flags = {{"data", "FILE", "JSONL examples, or a BFCL data file (required)"},
                                 {"model", "FILE", "model archive (default: $NEEDLE_MODEL, else the embedded model)"},
                                 {"limit", "N", "first N examples only"},
                                 {"jobs", "K", "sessions evaluated in parallel (default 1)"},
                                 {"long-session", "N", "also re-ask each single-turn example after N turns of other traffic"},
                                 {"json", "", "print only the final JSON object (default: a table, then the JSON)"},
                                 {"failures", "FILE", "write the mispredicted turns (JSONL)"},
                                 {"rollouts", "FILE", "write each turn's tokens (sink block, earlier turns in reach, the turn) and whether its calls were exact, JSONL (confidence-head training)"},
                                 {"out", "PREDS.jsonl", "write every turn's prediction (input, expected calls, envelope)"},
                                 {"report", "FILE", "write the final JSON object here too"}};
  for (FlagSpec& f : DecodingFlags()) flags.push_back(std::move(f));
  Args args("eval", "--data TEST.jsonl [--model FILE.cact] [flags]", summary, std::move(flags));
  if (!args.Parse(argc, argv)) return 0;
  const std::string data = args.Require("data");
  auto model = args.Has("model") ? Model::Open(args.Get("model")) : Model::Default();
  std::vector<ojson> examples;
  {
    std::ifstream in(data);
    if (!in) throw Error(ErrorCode::kIo, "cannot open '" + data + "'");
    std::string line;
    size_t lineno = 0;
    const long long limit = args.GetInt("limit", -1);
    std::optional<std::map<std::string, ojson>> bfcl_truth;  // BFCL ground truth by id, read at the first BFCL line
    while (std::getline(in, line) && (limit < 0 || (long long)examples.size() < limit)) {
      ++lineno;
      if (line.empty()) continue;
      auto j = ojson::parse(line, nullptr, false);
      if (!j.is_discarded() && bfcl::IsBfclLine(j)) {
        if (!bfcl_truth) bfcl_truth = ReadBfclTruth(data);
        const std::string id = j.value("id", std::string());
        const auto t = bfcl_truth->find(id);
        if (!bfcl::ExpectsNoCall(data) && t == bfcl_truth->end()) {
          throw Error(ErrorCode::kInvalidArgument, data + ":" + std::to_string(lineno) + ": no ground truth for '" + id + "' in " + bfcl::AnswerPathFor(data));
        }
        examples.push_back(bfcl::ToExample(j, t == bfcl_truth->end() ? ojson::array() : t->second));
        continue;
      }
      if (j.is_discarded() || !j.is_object() || !j.contains("query") || !j.contains("tools")) {
        throw Error(ErrorCode::kInvalidJson, data + ":" + std::to_string(lineno) + ": not an example (JSON with query and tools, or a BFCL line)");
      }
      examples.push_back(std::move(j));
    }
  }
  SessionOptions opt;
  ReadDecodingFlags(args, opt);
  const long long long_session = args.GetInt("long-session", 0);
  const unsigned jobs = static_cast<unsigned>(std::max(1LL, args.GetInt("jobs", 1)));

  std::mutex mu;
  Score total, turn1, turn_late;
  PairedOutcomes paired_exact, paired_selection;  // turn 1 vs the late turn, case by case
  // First turns by the example's kind (`meta.kind`, generate-data --meta): [first turns, exact].
  using KindCounts = std::map<std::string, std::pair<uint64_t, uint64_t>>;
  KindCounts by_kind;
  // Output lines keyed by their example: workers finish examples in any order,
  // the files are written in example order (train-heads' held-out split
  // follows the rollouts' order, so it must not depend on --jobs).
  using IndexedLines = std::vector<std::pair<size_t, std::string>>;
  IndexedLines failures, rollouts, predictions;
  const bool want_rollouts = args.Has("rollouts"), want_preds = args.Has("out");
  std::atomic<size_t> next{0}, done{0};
  const auto t0 = std::chrono::steady_clock::now();
  ProgressLine progress("eval", examples.size());
  auto worker = [&]() {
    Score local, l1, lN;
    KindCounts kinds;
    PairedOutcomes p_exact, p_selection;
    IndexedLines fails, rolls, preds;
    for (size_t i; (i = next++) < examples.size();) {
      const ojson& ex = examples[i];
      Session s(model, opt);
      size_t turn = 0;
      auto record = [&](const Envelope& e, const ojson& want, bool first, Score& sc, const std::string& q) {
        // BFCL examples are judged by BFCL's rules (acceptable values, optional arguments).
        std::optional<bool> by_rule;
        std::string mismatch;
        if (ex.contains("bfcl") && e.success()) {
          by_rule = bfcl::Matches(json::parse(ex["bfcl"]["functions"].dump()), json::parse(e.function_calls.dump()),
                                  json::parse(ex["bfcl"]["truth"].dump()), &mismatch);
        }
        const TurnOutcome o = sc.Add(e, json::parse(want.dump()), first, by_rule);
        ojson rec{{"index", i}, {"turn", turn++}, {"input", q}, {"exact", o.exact}, {"want", want}, {"got", e.ToJson()}};
        if (ex.contains("bfcl")) rec["bfcl_id"] = ex["bfcl"]["id"];
        if (!mismatch.empty()) rec["mismatch"] = mismatch;
        // The tools ranked for the last query (head cosine + lexical share, and the cosine alone), best first.
        if (const std::vector<float>& sc = s.tool_scores(); !sc.empty() && sc.size() == s.tools().size()) {
          std::vector<size_t> order(sc.size());
          for (size_t k = 0; k < order.size(); ++k) order[k] = k;
          std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return sc[a] > sc[b]; });
          const std::vector<float>& cos = s.tool_cosines();
          ojson ranking = ojson::array();
          for (size_t k : order) {
            ojson r{{"name", s.tools()[k].value("name", "")}, {"score", std::round(double(sc[k]) * 1000) / 1000}};
            if (cos.size() == sc.size()) r["cosine"] = std::round(double(cos[k]) * 1000) / 1000;
            ranking.push_back(std::move(r));
          }
          rec["ranking"] = std::move(ranking);
        }
        const std::string line = rec.dump(-1, ' ', false, ojson::error_handler_t::replace);
        if (want_preds) preds.push_back({i, line});
        if (!o.exact) fails.push_back({i, line});
        return o;
      };
      try {
        s.SetTools(ex["tools"]);
        s.SetSystem(ex.contains("system") ? ex["system"] : ojson());
      } catch (const Error& err) {
        const Envelope e = ErrorEnvelope(err.code(), err.what());
        record(e, ex.value("answers", ojson::array()), true, local, ex["query"].get<std::string>());
        continue;
      }
      // Rollouts: the sink block, the earlier turns still in reach of the
      // window (context only, as the cache holds them) and the turn the
      // confidence head scored; pool_from = where the scored turn begins.
      std::vector<int32_t> history, rollout_sinks;
      auto add_rollout = [&](const Envelope& e, bool exact, size_t at_turn) {
        if (!want_rollouts) return;
        if (s.sink_ids() != rollout_sinks) history.clear(), rollout_sinks = s.sink_ids();  // a rebuilt sink block empties the cache
        if (e.success()) {
          std::vector<int32_t> ids = s.sink_ids();
          ids.insert(ids.end(), history.begin(), history.end());
          const size_t pool_from = ids.size();
          ids.insert(ids.end(), s.turn_ids().begin(), s.turn_ids().end());
          rolls.emplace_back(i, json{{"index", i}, {"turn", at_turn}, {"sink", s.sink_ids().size()}, {"pool_from", pool_from}, {"exact", exact},
                                    {"call_p", s.call_probability()}, {"ids", ids}}.dump());
        }
        history.insert(history.end(), s.turn_ids().begin(), s.turn_ids().end());
        if (history.size() > kRolloutHistory) history.erase(history.begin(), history.end() - kRolloutHistory);
      };
      const std::string q = ex["query"].get<std::string>();
      const ojson answers = ex.value("answers", ojson::array());
      const Envelope first = s.Query(q);
      const bool first_exact = record(first, answers, true, local, q).exact;
      add_rollout(first, first_exact, 0);
      if (ex.contains("meta") && ex["meta"].is_object() && ex["meta"].contains("kind") && ex["meta"]["kind"].is_string()) {
        auto& k = kinds[ex["meta"]["kind"].get<std::string>()];
        ++k.first, k.second += first_exact;
      }
      if (ex.contains("turns") && ex["turns"].is_array()) {
        for (const auto& t : ex["turns"]) {
          Envelope e;
          std::string input;
          if (t.contains("tool_result")) {
            input = t["tool_result"].is_string() ? t["tool_result"].get<std::string>() : t["tool_result"].dump();
            e = s.ToolResult(input);
          } else {
            input = t.value("query", "");
            e = s.Query(input);
          }
          const size_t at_turn = turn;
          add_rollout(e, record(e, t.value("answers", ojson::array()), false, local, input).exact, at_turn);
        }
      } else if (long_session > 0) {
        const TurnOutcome o1 = l1.Add(first, json::parse(answers.dump()), true);
        for (long long k = 0; k < long_session; ++k) {
          const Envelope e = s.Complete(s.last_type() == EnvelopeType::kCall ? R"({"status":"ok"})" : kTraffic[k % 10]);
          (void)e;
        }
        // Recorded like any turn (--out, --failures), numbered by its place in the session.
        turn = static_cast<size_t>(long_session) + 1;
        const TurnOutcome oN = record(s.Query(q), answers, true, lN, q);
        p_exact.Add(o1.exact, oN.exact);
        p_selection.Add(o1.selection, oN.selection);
      }
      const size_t d = ++done;
      if (d % 5 == 0 || d == examples.size()) {
        std::lock_guard<std::mutex> lock(mu);
        progress.Update(d, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), "examples");
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    total.Merge(local), turn1.Merge(l1), turn_late.Merge(lN);
    for (const auto& [kind, n] : kinds) by_kind[kind].first += n.first, by_kind[kind].second += n.second;
    paired_exact.Merge(p_exact), paired_selection.Merge(p_selection);
    failures.insert(failures.end(), fails.begin(), fails.end());
    rollouts.insert(rollouts.end(), rolls.begin(), rolls.end());
    predictions.insert(predictions.end(), preds.begin(), preds.end());
  };
  std::vector<std::thread> threads;
  for (unsigned j = 1; j < jobs; ++j) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  // Each example's lines are in turn order already (one worker plays it).
  for (IndexedLines* lines : {&failures, &rollouts, &predictions}) {
    std::stable_sort(lines->begin(), lines->end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  }
  progress.Finish();
  ojson report = total.Report();
  report["examples"] = examples.size();
  if (!by_kind.empty()) {
    ojson kinds = ojson::object();
    for (const auto& [kind, n] : by_kind) {
      kinds[kind] = {{"first_turns", n.first}, {"exact", n.second}, {"exact_call", std::round(1000.0 * double(n.second) / double(n.first)) / 10.0}};
    }
    report["first_turns_by_kind"] = std::move(kinds);
  }
  report["seconds"] = std::round(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  if (long_session > 0) {
    report["long_session"] = {{"turns_between", long_session},
                              {"turn_1", turn1.Report()},
                              {"turn_" + std::to_string(long_session + 2), turn_late.Report()},
                              {"paired_exact_call", PairedReport(paired_exact)},
                              {"paired_tool_selection", PairedReport(paired_selection)}};
  }
  const std::string text = report.dump(2);
  if (!args.Has("json")) {
    std::printf("%-28s %s\n", "examples / turns", (std::to_string(examples.size()) + " / " + std::to_string(total.turns)).c_str());
    for (const char* k : {"exact_call", "exact_call_first_turn", "exact_call_session_turns", "tool_selection", "argument_precision",
                          "argument_recall", "refusal_precision", "refusal_recall", "schema_valid"}) {
      std::printf("%-28s %.1f%%\n", k, report[k].get<double>());
    }
    std::printf("%-28s %s\n", "confidence right / wrong", (report["mean_confidence_right"].dump() + " / " + report["mean_confidence_wrong"].dump()).c_str());
    std::printf("%-28s %s / %s tok/s\n\n", "prefill / decode", report["mean_prefill_tps"].dump().c_str(), report["mean_decode_tps"].dump().c_str());
  }
  std::printf("%s\n", text.c_str());
  if (args.Has("report")) std::ofstream(args.Get("report")) << text << "\n";
  if (want_preds) {
    std::ofstream f(args.Get("out"));
    for (const auto& l : predictions) f << l.second << "\n";
  }
  if (want_rollouts) {
    std::ofstream f(args.Get("rollouts"));
    for (const auto& l : rollouts) f << l.second << "\n";
  }
  if (args.Has("failures")) {
    std::ofstream f(args.Get("failures"));
    for (const auto& l : failures) f << l.second << "\n";
  }
  return 0;
}

}  // namespace needle::cli
