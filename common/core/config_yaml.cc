// Reading the config from YAML and --set overrides, and writing the
// resolved config back as YAML, through the schema's one table.
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/core/config.h"
#include "common/core/config_schema.h"
#include "common/core/status_macros.h"

namespace shefl {
namespace {

using config_schema::Field;
using config_schema::FindField;
using config_schema::Hint;
using config_schema::IsSection;
using config_schema::Target;

std::string NodeText(const YAML::Node& n) {
  if (n.IsScalar()) return n.Scalar();
  std::ostringstream os;
  os << n;
  return os.str();
}

absl::Status BadValue(const std::string& where, const Field& f,
                      const std::string& what) {
  return absl::InvalidArgumentError(
      absl::StrCat(where, ": key '", f.key, "': ", what));
}

// NaN and the infinities are never a setting: `alpha: .inf` passed an
// unbounded range, then failed in the partition, and its resolved dump
// ("inf") did not load again (fuzz/config_fuzzer.cc's reload check).
absl::Status CheckRange(const std::string& where, const Field& f, double v) {
  if (!std::isfinite(v) || v < f.min || v > f.max) {
    return BadValue(where, f,
                    absl::StrFormat("value %g is out of range [%g, %g]", v,
                                    f.min, f.max));
  }
  return absl::OkStatus();
}

// Sets one field from a YAML scalar, checking type and range.
absl::Status SetField(const std::string& where, const Field& f,
                      const YAML::Node& n) {
  if (!n.IsScalar()) return BadValue(where, f, "expected a single value");
  const std::string text = n.Scalar();
  try {
    if (auto* s = std::get_if<std::string*>(&f.target)) {
      if (!f.choices.empty() &&
          std::find(f.choices.begin(), f.choices.end(), text) ==
              f.choices.end()) {
        return BadValue(where, f,
                        absl::StrCat("'", text, "' is not one of: ",
                                     absl::StrJoin(f.choices, ", ")));
      }
      **s = text;
    } else if (auto* i = std::get_if<int64_t*>(&f.target)) {
      int64_t v = n.as<int64_t>();
      SHEFL_RETURN_IF_ERROR(CheckRange(where, f, static_cast<double>(v)));
      **i = v;
    } else if (auto* u = std::get_if<uint64_t*>(&f.target)) {
      if (absl::StartsWith(text, "-"))
        return BadValue(where, f, "expected a non-negative integer");
      **u = n.as<uint64_t>();
    } else if (auto* dv = std::get_if<double*>(&f.target)) {
      double v = n.as<double>();
      SHEFL_RETURN_IF_ERROR(CheckRange(where, f, v));
      **dv = v;
    } else if (auto* b = std::get_if<bool*>(&f.target)) {
      **b = n.as<bool>();
    }
  } catch (const YAML::Exception&) {
    const char* type = std::holds_alternative<bool*>(f.target)     ? "a boolean"
                       : std::holds_alternative<double*>(f.target) ? "a number"
                                                                   : "an integer";
    return BadValue(where, f,
                    absl::StrCat("expected ", type, ", got '", text, "'"));
  }
  return absl::OkStatus();
}

absl::Status Walk(const std::string& source, const YAML::Node& node,
                  const std::string& prefix, const std::vector<Field>& fields,
                  ConfigOrigins* seen) {
  if (!node.IsMap()) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ":", node.Mark().line + 1, ": ",
        prefix.empty() ? "the top level" : "key '" + prefix + "'",
        " must be a mapping of keys to values"));
  }
  for (const auto& kv : node) {
    const std::string key =
        prefix.empty() ? kv.first.Scalar() : prefix + "." + kv.first.Scalar();
    const std::string where =
        absl::StrCat(source, ":", kv.first.Mark().line + 1);
    if (const Field* f = FindField(fields, key)) {
      SHEFL_RETURN_IF_ERROR(SetField(where, *f, kv.second));
      (*seen)[key] = where;
    } else if (IsSection(fields, key)) {
      if (kv.second.IsNull()) continue;  // an empty section keeps defaults
      SHEFL_RETURN_IF_ERROR(Walk(source, kv.second, key, fields, seen));
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": unknown key '", key, "'", Hint(key, fields)));
    }
  }
  return absl::OkStatus();
}

absl::Status ApplyOverride(const std::string& kv,
                           const std::vector<Field>& fields, ConfigOrigins* seen) {
  const size_t eq = kv.find('=');
  if (eq == std::string::npos || eq == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--set '", kv, "': expected key=value, e.g. --set rounds=3"));
  }
  const std::string key = kv.substr(0, eq);
  const Field* f = FindField(fields, key);
  if (f == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--set: unknown key '", key, "'", Hint(key, fields)));
  }
  YAML::Node value;
  try {
    value = YAML::Load(kv.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("--set ", key, ": cannot parse value: ", e.what()));
  }
  if (value.IsNull()) value = YAML::Node(std::string());
  SHEFL_RETURN_IF_ERROR(SetField("--set", *f, value));
  (*seen)[key] = "--set";
  return absl::OkStatus();
}

// Shortest decimal that reads back to the same double.
std::string ShortestDouble(double v) {
  for (int prec = 1; prec <= 17; ++prec) {
    std::string s = absl::StrFormat("%.*g", prec, v);
    if (std::strtod(s.c_str(), nullptr) == v) return s;
  }
  return absl::StrFormat("%.17g", v);
}

void EmitValue(YAML::Emitter& out, const Target& t) {
  if (auto* s = std::get_if<std::string*>(&t)) {
    out << YAML::DoubleQuoted << **s;
  } else if (auto* i = std::get_if<int64_t*>(&t)) {
    out << **i;
  } else if (auto* u = std::get_if<uint64_t*>(&t)) {
    out << **u;
  } else if (auto* d = std::get_if<double*>(&t)) {
    out << ShortestDouble(**d);
  } else if (auto* b = std::get_if<bool*>(&t)) {
    out << YAML::TrueFalseBool << **b;
  }
}

}  // namespace

absl::StatusOr<ParsedConfig> ParseConfigKeys(
    const std::string& yaml_text, const std::string& source,
    const std::vector<std::string>& overrides) {
  ParsedConfig parsed;
  parsed.source = source;
  const std::vector<Field> fields = config_schema::Fields(parsed.config);
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ":", e.mark.line + 1, ": not valid YAML: ", e.msg));
  }
  if (!root.IsNull()) {
    SHEFL_RETURN_IF_ERROR(Walk(source, root, "", fields, &parsed.origins));
  }
  for (const std::string& kv : overrides) {
    SHEFL_RETURN_IF_ERROR(ApplyOverride(kv, fields, &parsed.origins));
  }
  return parsed;
}

absl::StatusOr<std::string> ReadConfigText(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("config file '", path, "' cannot be read"));
  }
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string ConfigValueText(const ExperimentConfig& config,
                            const std::string& key) {
  ExperimentConfig copy = config;
  const std::vector<Field> fields = config_schema::Fields(copy);
  const Field* f = FindField(fields, key);
  if (f == nullptr) return "";
  if (auto* s = std::get_if<std::string*>(&f->target)) return **s;
  if (auto* b = std::get_if<bool*>(&f->target)) return **b ? "true" : "false";
  if (auto* d = std::get_if<double*>(&f->target)) return ShortestDouble(**d);
  if (auto* i = std::get_if<int64_t*>(&f->target)) return absl::StrCat(**i);
  if (auto* u = std::get_if<uint64_t*>(&f->target)) return absl::StrCat(**u);
  return "";
}

absl::Status SetConfigValue(ExperimentConfig* config, const std::string& key,
                            const std::string& value, const std::string& where) {
  const std::vector<Field> fields = config_schema::Fields(*config);
  const Field* f = FindField(fields, key);
  if (f == nullptr)
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": unknown key '", key, "'"));
  return SetField(where, *f, YAML::Node(value));
}

std::string ConfigToYaml(const ExperimentConfig& config) {
  ExperimentConfig copy = config;
  YAML::Emitter out;
  out << YAML::BeginMap;
  std::string section;
  for (const Field& f : config_schema::Fields(copy)) {
    const size_t dot = f.key.find('.');
    const std::string sec = dot == std::string::npos ? "" : f.key.substr(0, dot);
    if (sec != section) {
      if (!section.empty()) out << YAML::EndMap;
      if (!sec.empty()) out << YAML::Key << sec << YAML::Value << YAML::BeginMap;
      section = sec;
    }
    out << YAML::Key << f.key.substr(dot == std::string::npos ? 0 : dot + 1)
        << YAML::Value;
    EmitValue(out, f.target);
  }
  if (!section.empty()) out << YAML::EndMap;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace shefl
