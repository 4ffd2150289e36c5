// Private to the generator (generator.cc and gen_*.cc): the state of one
// example while it is built, and the stages that build it. Each stage has its
// own file:
//   generator.cc      construction, the dispatch by kind, system facts, the answered one-turn kinds
//   gen_schemas.cc    the tools declared: catalogue or synthesised spellings, distractors,
//                     invented capabilities, the user's own schemas (--tools) and the API schemas
//   gen_requests.cc   the request's phrasing: templates, style, wrappers, typos
//   gen_values.cc     the values: drawn for a rendered template, then written into the call
//   gen_refusals.cc   the refusal kinds
//   gen_sessions.cc   multi-turn sessions: lookup-then-act chains, follow-ups, tool results
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "data/generator.h"  // Generator, Example, ExampleMeta
#include "data/values.h"     // SlotValue, ValueContext, Rng

namespace needle::data {

// A piece of the request text; protected pieces are values that answers copy.
struct Piece {
  std::string text;
  bool protect = false;
};

struct Style {
  bool lower = false;     // typed all lowercase (values too, where the slot allows)
  bool sentence = true;   // first letter capitalised
  int typos = 0;          // typos in non-value words
  std::string end;        // final punctuation for non-questions
};

struct Request {
  const Capability* cap = nullptr;
  const ToolSpec* tool = nullptr;  // the tool whose schema shapes the values (declared or hidden)
  const Template* tmpl = nullptr;
  Rendered r;
  std::map<std::string, SlotValue> values;
  ojson call;
  std::string reason;
};

// `a` and `b` are the same capability, or one serves the other's requests.
bool Overlapping(const Capability& a, const Capability& b);

// Everything one example needs while it is built.
struct Build {
  const Generator& g;
  const Catalogue& cat;
  Split split;
  Rng rng;
  ValueContext ctx;
  std::deque<Capability> owned;     // invented capabilities
  std::deque<ToolSpec> store;       // every tool made (stable addresses)
  std::vector<const ToolSpec*> declared;
  std::set<std::string> names;
  ExampleMeta meta;
  std::vector<std::pair<std::string, std::string>> facts;
  bool no_open_ended = false;  // off-topic requests: a web search could serve almost anything

  // Draw `draw` of example `index` (draws after the first replace an example
  // that asked an evaluation request).
  Build(const Generator& gen, uint64_t index, int draw = 0);

  // ---- the example as a whole (generator.cc) -------------------------------------------------
  std::vector<std::string> Words(const std::string& key) const;
  std::string Fact(const std::string& key) const;
  bool FactFill(const SlotDef& s) const;
  void DrawFacts(double p);
  std::string SystemText() const;
  ojson Output(const std::string& query, const ojson& answers, const std::string& reasoning);
  void ShuffleDeclared();
  void Reset();
  const Capability* PickTarget(bool commands_only = false);

  // ---- kinds (generator.cc; refusals in gen_refusals.cc, sessions in gen_sessions.cc) ---------
  Example Single();
  Example Parallel();
  Example Extraction();
  Example Invented();
  Example User();
  Example Api();
  // Examples for schemas taken as they are (the user's, or the API schemas):
  // requests for tools[targets[...]], the others as distractors; kind "user" or "api".
  Example OwnTools(const std::vector<ToolSpec>& tools, const std::vector<size_t>& targets, const std::string& kind);
  bool HiddenRequest(const Capability& cap, Request& rq);
  Example RefuseOffTopic();
  Example RefuseUnserved(bool near_miss);
  std::string RefusedQuery(const Capability& cap, const ToolSpec& T, const Template& t, Request& rq);
  Example RefuseEnum();
  Example RefuseMissing();
  Example Session();

  // ---- tools (gen_schemas.cc) -------------------------------------------------------------------
  int ToolCount();
  const ToolSpec& MakeSpelling(const Capability& cap, double catalogue_p = 0.42);
  const ToolSpec& Declare(const ToolSpec& t);
  bool IsDeclaredCap(const Capability* c) const;
  const ToolSpec* DeclaredFor(const Capability* c) const;
  void AddDistractors(const std::vector<const Capability*>& primary, int total,
                      const std::vector<const Capability*>& avoid = {});
  ojson ToolsJson();
  Capability& Invent(const std::string& verb_in = "", const std::string& object_in = "");
  const ToolSpec& InventedTool(Capability& c);

  // ---- phrasing (gen_requests.cc) ---------------------------------------------------------------
  bool Fits(const Template& t, const ToolSpec& T, bool mentions_ok = false) const;
  const Template* PickTemplate(const std::vector<Template>& list, const ToolSpec& T, bool commands_only,
                               bool mentions_ok = false);
  bool MakeRequest(const Capability& cap, bool commands_only, Request& rq, const ToolSpec** tool_out);
  Style DrawStyle();
  std::vector<Piece> Pieces(const Request& rq) const;
  std::string Assemble(std::vector<Piece> body, const Style& st, bool command, bool question);
  Template GenericTemplate(const ToolSpec& T, const std::vector<std::string>& actions, bool use_synonyms);
  std::vector<std::string> ActionPhrases(const Capability& c) const;
  // A request template for one of the user's tools (--tools): phrased from
  // its description, its values placed where a person says them.
  Template UserTemplate(const ToolSpec& T);
  // A template of the lead ("can you ", "") then the escaped body: a question
  // when the lead asks one.
  Template LedTemplate(const std::string& lead, const std::string& body, const char* id) const;
  std::string SlotsOf(const ParamBinding& b, const std::string& open, const std::string& close) const;
  std::vector<std::string> UserActions(const Capability& c, const ToolSpec& T) const;

  // ---- values (gen_values.cc) -------------------------------------------------------------------
  bool RenderRequest(const Capability& cap, const ToolSpec& T, const Template& t, Request& out);
  void Finish(Request& rq, const Style& st, bool make_call = true);

  // ---- session turns (gen_sessions.cc) ----------------------------------------------------------
  ojson ResultFor(const Request& rq, ojson* record);
  std::string DoneReason(const ojson& result);
  ojson Records(const Chain& ch, const std::map<std::string, SlotValue>& vals, ojson& target);
  bool ActCall(const Capability& act, const ToolSpec& T, const std::map<std::string, std::string>& mapping,
               const ojson& record, const std::map<std::string, SlotValue>& vals, const std::vector<SlotDef>& slot_defs,
               ojson& call, std::string& reason);
};

}  // namespace needle::data
