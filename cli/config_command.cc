#include "cli/config_command.h"

#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "cli/command_preamble.h"
#include "common/core/config.h"
#include "common/core/config_schema.h"
#include "common/core/model_catalog.h"
#include "common/core/status_macros.h"
#include "common/fed/config_load.h"
#include "common/fed/methods/registry.h"

namespace shefl {
namespace {

using config_schema::Field;

struct ConfigArgs {
  std::string config;
  std::vector<std::string> overrides;
  bool reference = false;
  std::string write;  // --write FILE: splice the reference into FILE
};

// A range bound as a reader writes it: 1, 0.5, 1e+09.
std::string Bound(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e6)
    return absl::StrFormat("%.0f", v);
  return absl::StrFormat("%g", v);
}

std::string TypeName(const Field& f) {
  switch (f.target.index()) {
    case 0: return "string";
    case 1: return "integer";
    case 2: return "integer";
    case 3: return "number";
    default: return "boolean";
  }
}

std::string Quoted(const std::vector<std::string>& names) {
  std::vector<std::string> q;
  for (const std::string& n : names) q.push_back(absl::StrCat("`", n, "`"));
  return absl::StrJoin(q, ", ");
}

// What the loader accepts: the choices, the registries' names, a range.
std::string Allowed(const Field& f) {
  if (f.key == "method") return Quoted(MethodNames());
  if (f.key == "model.name") return Quoted(ModelCatalog());
  if (!f.choices.empty()) return Quoted(f.choices);
  switch (f.target.index()) {
    case 0: return "any text";
    case 2: return "0 or more";
    case 4: return "`true`, `false`";
    default: break;
  }
  const bool lo = std::isfinite(f.min), hi = std::isfinite(f.max);
  if (lo && hi) return absl::StrCat(Bound(f.min), " to ", Bound(f.max));
  if (lo) return absl::StrCat(Bound(f.min), " or more");
  return "any";
}

// `f` points into a default config. Numbers in at most 6 digits (600,
// not the loader's round-trip form 6e+02).
std::string DefaultText(const Field& f) {
  const std::string v = f.target.index() == 3
                            ? absl::StrCat(*std::get<double*>(f.target))
                            : ConfigValueText(ExperimentConfig{}, f.key);
  if (v.empty()) return "(empty)";
  return absl::StrCat("`", v, "`");
}

// Table cells: a `|` would end the cell, a `<` open an HTML tag.
std::string Cell(const std::string& text) {
  return absl::StrReplaceAll(text, {{"|", "\\|"}, {"<", "&lt;"}});
}

absl::StatusOr<ConfigArgs> Parse(const std::vector<std::string>& args) {
  ConfigArgs a;
  for (size_t i = 1; i < args.size(); ++i) {
    std::string flag = args[i], value;
    const bool has_eq = absl::StartsWith(flag, "--") &&
                        flag.find('=') != std::string::npos;
    if (has_eq) {
      value = flag.substr(flag.find('=') + 1);
      flag = flag.substr(0, flag.find('='));
    }
    if (flag == "--reference") {
      a.reference = true;
    } else if (flag == "--set" || flag == "--write") {
      if (!has_eq) {
        SHEFL_ASSIGN_OR_RETURN(value, NextValue(args, i));
      }
      (flag == "--set" ? a.overrides.emplace_back() : a.write) = value;
    } else if (absl::StartsWith(flag, "-")) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag for config: ", flag));
    } else if (a.config.empty()) {
      a.config = flag;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("config takes one CONFIG, got another: ", flag));
    }
  }
  if (a.reference && (!a.config.empty() || !a.overrides.empty()))
    return absl::InvalidArgumentError(
        "--reference describes every key; it takes no CONFIG or --set");
  if (!a.write.empty() && !a.reference)
    return absl::InvalidArgumentError("--write goes with --reference");
  if (!a.reference && a.config.empty())
    return absl::InvalidArgumentError("config needs a CONFIG file");
  return a;
}

// The keys each method sets in a config that sets only `method`: its
// presets and pins, found by loading that config, so the table follows
// the registry.
std::string PresetsMarkdown() {
  std::ostringstream out;
  out << "### Method presets\n\n"
         "What `method: X` sets in a config that leaves the key unset, "
         "found by loading such a config (a value that follows another key "
         "is shown for that key's default: 100 clients). Some of these the "
         "method also requires: another value is refused, with the `--set` "
         "flags that fix it.\n\n"
         "| method | what it is | keys it sets |\n| --- | --- | --- |\n";
  ExperimentConfig defaults;
  for (const std::string& name : MethodNames()) {
    const Method* method = *FindMethod(name);
    auto resolved = ParseConfigWithOverrides(
        absl::StrCat("method: ", name, "\n"), "preset", {});
    std::vector<std::string> set;
    if (resolved.ok()) {
      for (const std::string& key : ConfigKeys()) {
        const std::string v = ConfigValueText(*resolved, key);
        if (key != "method" && v != ConfigValueText(defaults, key))
          set.push_back(absl::StrCat("`", key, ": ", v, "`"));
      }
    } else {
      set.push_back(absl::StrCat("(does not load alone: ",
                                 resolved.status().message(), ")"));
    }
    out << "| `" << name << "` | " << Cell(method->summary()) << " | "
        << Cell(set.empty() ? "none" : absl::StrJoin(set, ", ")) << " |\n";
  }
  return out.str();
}

}  // namespace

std::string ConfigUsage() {
  return "usage: shefl config CONFIG [--set key=value ...]\n"
         "       shefl config --reference [--write FILE]\n"
         "\n"
         "  CONFIG            experiment YAML\n"
         "  --set key=value   override one config key (repeatable), as\n"
         "                    `shefl run` takes it\n"
         "  --reference       every key with its type, default, allowed\n"
         "                    values and meaning, as Markdown\n"
         "  --write FILE      with --reference: replace the generated part\n"
         "                    of FILE (docs/CONFIGURATION.md) instead of\n"
         "                    printing\n"
         "\n"
         "Prints the resolved config (every key, after the method's presets\n"
         "and the overrides) as YAML: what a run would use and write to\n"
         "RUN_DIR/config.yaml. A bad key or value is printed as the loader\n"
         "reports it, naming the key. Exit status: 0, 2 on a usage or\n"
         "config error, 1 when FILE cannot be written.\n";
}

std::string ConfigReferenceMarkdown() {
  ExperimentConfig c;
  std::ostringstream out;
  out << PresetsMarkdown();
  std::string section = "-";
  for (const Field& f : config_schema::Fields(c)) {
    const size_t dot = f.key.find('.');
    const std::string sec = dot == std::string::npos ? "" : f.key.substr(0, dot);
    if (sec != section) {
      out << "\n### "
          << (sec.empty() ? "Top level" : absl::StrCat("`", sec, ".*`"))
          << "\n\n| key | type | default | allowed | description |\n"
          << "| --- | --- | --- | --- | --- |\n";
      section = sec;
    }
    out << "| `" << f.key << "` | " << TypeName(f) << " | "
        << Cell(DefaultText(f)) << " | " << Cell(Allowed(f)) << " | "
        << Cell(f.description) << " |\n";
  }
  return out.str();
}

absl::Status WriteReferenceInto(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const size_t begin = doc.find(kReferenceBegin);
  const size_t end = doc.find(kReferenceEnd);
  if (begin == std::string::npos || end == std::string::npos || end < begin)
    return absl::InvalidArgumentError(absl::StrCat(
        path, " lacks the markers ", kReferenceBegin, " and ", kReferenceEnd));
  const size_t after_begin = begin + std::string(kReferenceBegin).size();
  const std::string updated = absl::StrCat(
      doc.substr(0, after_begin), "\n", ConfigReferenceMarkdown(),
      doc.substr(end));
  std::ofstream out(path, std::ios::trunc);
  out << updated;
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

namespace {

// The reference or the resolved config; exit 2 on a config error, 1 when
// the reference cannot be written.
int Print(const ConfigArgs& a) {
  if (a.reference && !a.write.empty()) {
    if (absl::Status st = WriteReferenceInto(a.write); !st.ok()) {
      std::cerr << "shefl config: " << st.message() << "\n";
      return 1;
    }
    std::cout << "reference written into " << a.write << "\n";
    return 0;
  }
  if (a.reference) {
    std::cout << ConfigReferenceMarkdown();
    return 0;
  }
  absl::StatusOr<ExperimentConfig> config = LoadConfig(a.config, a.overrides);
  if (!config.ok()) {
    std::cerr << "shefl config: " << config.status().message() << "\n";
    return kUsageError;
  }
  std::cout << ConfigToYaml(*config);
  return 0;
}

}  // namespace

int ConfigCommand(const std::vector<std::string>& args) {
  return RunCommand(args, "config", ConfigUsage(), Parse, Print);
}

}  // namespace shefl
