// The vendored extract of real API descriptions (data/schemas/*.json): loads
// and checks every tool, so that a mistake in the extract names its file, tool
// and field instead of surfacing as an odd example.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.h"  // Error
#include "data/catalogue.h"

namespace needle::data {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void Bad(const std::string& where, const std::string& what) {
  throw Error(ErrorCode::kInvalidArgument, where + ": " + what);
}

bool IsSimpleType(const std::string& t) { return t == "string" || t == "integer" || t == "number" || t == "boolean"; }

// A property of a simple type, or an array of one (what one sentence can give).
void CheckProperty(const ojson& prop, const std::string& where, bool item) {
  if (!prop.is_object()) Bad(where, "must be an object");
  for (const auto& [k, v] : prop.items())
    if (k.rfind("x-", 0) == 0) Bad(where + "." + k, "annotations are not allowed in the extract");
  if (!prop.contains("type") || !prop["type"].is_string()) Bad(where + ".type", "needs a string type");
  const std::string type = prop["type"].get<std::string>();
  if (!IsSimpleType(type) && (item || type != "array"))
    Bad(where + ".type", "'" + type + "' is not string, integer, number, boolean or an array of those");
  if (!item && (!prop.contains("description") || !prop["description"].is_string() ||
                prop["description"].get<std::string>().empty()))
    Bad(where + ".description", "needs a non-empty description");
  if (type == "array") {
    if (!prop.contains("items")) Bad(where + ".items", "an array needs items");
    CheckProperty(prop["items"], where + ".items", true);
  }
  if (prop.contains("enum")) {
    const ojson& e = prop["enum"];
    if (type != "string" || !e.is_array() || e.empty()) Bad(where + ".enum", "must be a non-empty array on a string");
    for (const auto& v : e)
      if (!v.is_string() || v.get<std::string>().empty()) Bad(where + ".enum", "values must be non-empty strings");
  }
  if (prop.contains("format")) {
    const std::string f = prop["format"].is_string() ? prop["format"].get<std::string>() : "";
    if (type != "string" || (f != "date" && f != "time" && f != "date-time"))
      Bad(where + ".format", "only date, time or date-time on a string");
  }
  for (const char* bound : {"minimum", "maximum"})
    if (prop.contains(bound) && ((type != "integer" && type != "number") || !prop[bound].is_number()))
      Bad(where + "." + bound, "a bound must be a number on an integer or number");
  if (prop.contains("minimum") && prop.contains("maximum") && prop["minimum"].get<double>() > prop["maximum"].get<double>())
    Bad(where + ".minimum", "is above the maximum");
}

std::string StemOf(const std::string& path) { return fs::path(path).stem().string(); }

}  // namespace

void CheckApiTool(const ojson& tool, const std::string& where) {
  if (!tool.is_object()) Bad(where, "must be an object {name, description, parameters}");
  for (const char* key : {"name", "description"})
    if (!tool.contains(key) || !tool[key].is_string() || tool[key].get<std::string>().empty())
      Bad(where + "." + key, "needs a non-empty string");
  for (char c : tool["name"].get<std::string>())
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-'))
      Bad(where + ".name", "only letters, digits, '_', '.' and '-'");
  if (!tool.contains("parameters") || !tool["parameters"].is_object()) Bad(where + ".parameters", "needs a JSON Schema object");
  const ojson& params = tool["parameters"];
  if (params.value("type", "") != "object") Bad(where + ".parameters.type", "must be \"object\"");
  if (!params.contains("properties") || !params["properties"].is_object()) Bad(where + ".parameters.properties", "needs an object");
  const ojson& props = params["properties"];
  if (props.empty() || props.size() > 8) Bad(where + ".parameters.properties", "needs 1 to 8 properties");
  for (const auto& [name, prop] : props.items()) CheckProperty(prop, where + ".parameters.properties." + name, false);
  if (params.contains("required")) {
    if (!params["required"].is_array()) Bad(where + ".parameters.required", "must be an array of property names");
    for (const auto& r : params["required"])
      if (!r.is_string() || !props.contains(r.get<std::string>()))
        Bad(where + ".parameters.required", "names no property: " + r.dump());
  }
}

std::vector<ApiTool> LoadApiSchemas(const std::string& dir, const std::set<std::string>& taken) {
  std::vector<ApiTool> out;
  if (!fs::is_directory(dir)) return out;
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  std::set<std::string> names;
  for (const std::string& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) throw Error(ErrorCode::kIo, "cannot open " + f);
    std::stringstream ss;
    ss << in.rdbuf();
    ojson j;
    try {
      j = ojson::parse(ss.str());
    } catch (const nlohmann::json::exception& e) {
      throw Error(ErrorCode::kInvalidJson, f + ": " + e.what());
    }
    if (!j.is_object()) Bad(f, "must be an object {source, license, commit, tools}");
    for (const char* key : {"source", "license"})
      if (!j.contains(key) || !j[key].is_string() || j[key].get<std::string>().empty())
        Bad(f + " " + key, "needs a non-empty string (where the schemas come from, under which licence)");
    if (!j.contains("tools") || !j["tools"].is_array() || j["tools"].empty()) Bad(f + " tools", "needs a non-empty array");
    const ojson& tools = j["tools"];
    for (size_t i = 0; i < tools.size(); ++i) {
      std::string where = f + " tools[" + std::to_string(i) + "]";
      if (tools[i].is_object() && tools[i].contains("name") && tools[i]["name"].is_string())
        where += " '" + tools[i]["name"].get<std::string>() + "'";
      CheckApiTool(tools[i], where);
      const std::string name = tools[i]["name"].get<std::string>();
      if (taken.count(name)) Bad(where + ".name", "is a catalogue spelling's name too");
      if (!names.insert(name).second) Bad(where + ".name", "is used by two API tools");
      out.push_back(ApiTool{StemOf(f), tools[i], BucketOf(name, "api")});
    }
  }
  return out;
}

}  // namespace needle::data
