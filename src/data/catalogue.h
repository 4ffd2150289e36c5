// The tool catalogue behind `needle generate-data`, loaded from data/
// (docs/data-format.md describes every file). A capability is one thing a
// device can do ("set an alarm"); it has slots (the semantic arguments, each
// with a value generator), several schema spellings written by hand, phrase
// templates, and the vocabulary from which more spellings are synthesised.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/pattern.h"  // Pattern

namespace needle::data {

using ojson = nlohmann::ordered_json;

enum class Split { kTrain = 0, kVal = 1, kTest = 2 };
const char* SplitName(Split s);
Split ParseSplit(const std::string& name);  // train|val|test, else Error

// Held-out assignment of a stable key (salted by `what`): test 15%, val 10%,
// train 75%. Train may use only train items; val and test use their own and
// the train items (SplitAllows), except where a rule says "strict".
Split BucketOf(const std::string& key, const std::string& what);
inline bool SplitAllows(Split current, Split item) { return item == Split::kTrain || item == current; }

enum class SlotKind { kText, kInt, kNumber, kDuration, kDistance, kTime, kDate, kEnum, kList, kRef, kItems };
const char* SlotKindName(SlotKind k);

struct EnumValue {
  std::string id;                     // semantic value, e.g. "heat"
  std::vector<std::string> surfaces;  // words a request uses ("heat", "heating")
  std::vector<std::string> alts;      // other declared spellings ("HEAT" is automatic; "warm")
};

struct SlotDef {
  std::string id;
  SlotKind kind = SlotKind::kText;
  std::string pool;                   // kText, kList, kRef: pool of values
  bool required = false;              // required in synthesised spellings
  double min = 0, max = 0;            // kInt, kNumber, kDuration (seconds), kDistance (cm)
  bool has_range = false;
  int decimals = 0;                   // kNumber
  int step = 1;                       // kInt: values are drawn as multiples of step half the time
  std::vector<std::string> forms;     // kInt/kNumber surfaces: "{n}", "{n}%", "{w} percent", "${n}"
  std::vector<EnumValue> values;      // kEnum
  std::string bool_true;              // kEnum: the value a boolean parameter means by true
  bool subsettable = false;           // kEnum: spellings may declare a subset of the values
  std::vector<std::string> names;     // parameter-name synonyms (the first ones in every split)
  std::vector<std::string> descriptions;
  std::vector<std::string> reps;      // allowed representations in synthesised spellings
  int list_min = 1, list_max = 3;     // kList, kItems
  std::vector<SlotDef> fields;        // kItems: the fields of one item (e.g. description, quantity)
  std::vector<Pattern> lines;         // kItems: how one item is written, e.g. "- {quantity} x {description}"
  bool lowercase_ok = true;           // may be lowercased with an all-lowercase request
  std::string fact;                   // when the request omits it, a system fact may supply it ("location")
  std::string pair;                   // slots with the same pair id take parts of one pool item "a|b"
  int part = 0;                       // which part of the pair item this slot takes
  bool absolute = false;              // kDate: only absolute dates with a year (documents, records)
  std::string shape;                  // kText: values shaped like this example ("AAPL", "SKU-1234")
};

// How an argument is written in the answer, derived from the declared schema.
enum class Rep {
  kCopy,        // string: the request's words verbatim
  kInt,         // integer
  kNumber,      // number
  kTime24,      // string, format time: HH:MM (24-hour)
  kDate,        // string, format date: YYYY-MM-DD
  kDateTime,    // string, format date-time: YYYY-MM-DDTHH:MM:00 (two slots: date, time)
  kSeconds,     // integer seconds (durations)
  kMinutes,     // integer minutes
  kHours,       // number of hours
  kMeters,      // number of metres (distances)
  kCentimeters, // integer centimetres
  kEnum,        // string: one declared enum value
  kBool,        // boolean
  kStringList,  // array of strings, each copied
  kObjectList,  // array of objects (kItems), each field bound like a parameter
};
const char* RepName(Rep r);

struct ParamBinding {
  std::string name;      // declared property name
  std::string slot;      // slot filled into it ("" = never filled: an extra parameter)
  std::string slot2;     // kDateTime: the time slot
  Rep rep = Rep::kCopy;
  std::map<std::string, std::string> enum_map;  // semantic id -> declared value (kEnum)
  bool has_min = false, has_max = false;
  double min = 0, max = 0;  // the declared bounds (minimum/maximum), in the declared unit
  bool required = false;
  std::vector<ParamBinding> fields;  // kObjectList: one binding per item property (slot = field id)
};

struct Capability;

// One concrete tool: the schema as emitted plus how each property is filled.
struct ToolSpec {
  ojson schema;  // {"name", "description"?, "parameters"} exactly as written to the data
  const Capability* cap = nullptr;
  std::vector<ParamBinding> params;
  std::string origin;  // "catalogue", "synthetic", "invented", "user"
  std::string name() const { return schema["name"].get<std::string>(); }
  const ParamBinding* ForSlot(const std::string& slot) const;
  const ParamBinding* ForName(const std::string& name) const;
  bool Declares(const std::string& slot) const { return ForSlot(slot) != nullptr; }
  std::set<std::string> RequiredSlots() const;
};

struct Template {
  Pattern pattern;
  Split split = Split::kTrain;
  bool command = true;  // imperative: may be wrapped ("could you ... ?")
  std::string id;       // "<capability>#<index>" (stable)
};

struct Capability {
  std::string id, domain, group, does;  // does: "set an alarm" (refusal reasoning, descriptions)
  std::vector<std::string> verbs, objects, descriptions;
  std::vector<SlotDef> slots;
  std::vector<ToolSpec> spellings;      // catalogue spellings
  std::vector<Split> spelling_split;
  std::vector<Template> templates;      // commands and phrases
  std::vector<Template> vague;          // requests that omit a required argument
  std::vector<Template> passages;       // extraction records: the document text
  std::vector<std::string> overlaps;    // capabilities that could serve the same requests
  std::string session_role;             // "" or "ref" (acts on an id from a tool result)
  bool test_only = false;               // held out whole: only in the test split
  bool open_ended = false;              // could serve almost any question (web search): never beside off-topic requests
  ojson result;                // result template for sessions (may be null)
  const SlotDef* Slot(const std::string& id) const;
};

// One lookup-then-act chain for sessions (data/sessions.json).
struct Chain {
  std::string id, records;                 // records: contacts|places|tracks|devices|events
  std::string lookup, act;                 // capability ids
  std::map<std::string, std::string> lookup_args, act_args;  // cap slot -> chain slot or "@field"
  std::vector<SlotDef> slots;
  std::vector<Template> templates;
  std::vector<std::string> avoid;          // capabilities that would serve the request directly (never declared)
};

struct FollowUp {
  std::string id, act;                     // act: capability id
  std::vector<std::string> after;          // chain ids (or "create:<capability>")
  std::map<std::string, std::string> args; // cap slot -> "@field" of the earlier record
  std::vector<Template> templates;
};

// Pools of slot values with their split buckets.
struct Pool {
  std::vector<std::string> items;
  std::vector<Split> split;
};

// A tool schema from a real API description (data/schemas/*.json, built by
// scripts/import-api-schemas): its source (the file's stem), the schema as
// `--tools` reads it, and the split that owns it (by the hash of its name).
struct ApiTool {
  std::string source;
  ojson schema;
  Split split = Split::kTrain;
};

struct Catalogue {
  std::string dir;
  std::vector<Capability> caps;             // stable order (file name, then position)
  std::map<std::string, size_t> cap_index;  // id -> position
  std::map<std::string, Pool> pools;
  ojson lexicon;                   // data/lexicon.json
  std::vector<Chain> chains;
  std::vector<FollowUp> followups;
  std::set<std::string> catalogue_names;    // every catalogue spelling's tool name
  std::vector<SlotDef> invented_params;     // parameter kinds for invented capabilities
  std::set<std::string> held_out_requests;  // eval/'s requests, normalised: never generated (data/decontaminate.h)
  std::vector<ApiTool> api_tools;           // schemas/*.json, in file order then tool order

  // Loads and checks every file; throws needle::Error naming the file and field.
  static Catalogue Load(const std::string& dir);
  const Capability* Find(const std::string& id) const;
  // Lexicon list `key` restricted to what `split` may use (stratified buckets).
  std::vector<std::string> Words(const std::string& key, Split split) const;
};

// Loads and checks schemas/*.json under `dir` (none when the directory is
// absent); throws needle::Error naming the file, the tool and the field of a
// mistake. A name may not repeat a catalogue spelling's (`taken`) or another
// API tool's.
std::vector<ApiTool> LoadApiSchemas(const std::string& dir, const std::set<std::string>& taken);
// Checks one tool schema of schemas/*.json; `where` names it in errors.
void CheckApiTool(const ojson& tool, const std::string& where);

// The data directory: $NEEDLE_DATA_DIR, else an installed copy's
// PREFIX/share/needle/data, else the source tree's data/.
std::string DefaultDataDir();

// Parses one slot definition (shared by capabilities, chains, invented parameters).
SlotDef ParseSlot(const std::string& id, const ojson& j, const std::string& where);
// Builds a ToolSpec from a JSON schema with x-slot/x-unit/x-map annotations.
ToolSpec BindSpelling(const ojson& tool, const Capability& cap, const std::string& where);
// Removes x-* annotations recursively (what is emitted).
ojson CleanSchema(const ojson& j);
// Stratified template assignment: in a list of n, about 15% test and 10% val.
// keep_first: the first key always stays in train (the core spelling of a word list).
std::vector<Split> StratifiedSplits(const std::vector<std::string>& keys, const std::string& what,
                                    bool keep_first = false);

}  // namespace needle::data
