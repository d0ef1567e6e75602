#include "server/run/rounds_log.h"

#include <fstream>
#include <utility>

namespace shefl {

void RoundsLog::ForEach(const std::string& path,
                        const std::function<void(nlohmann::json&)>& fn) {
  std::ifstream in(path);
  std::string text;
  while (std::getline(in, text)) {
    auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_object()) fn(j);
  }
}

RoundsLog::Ends RoundsLog::ReadEnds(const std::string& path) {
  Ends ends;
  ForEach(path, [&ends](nlohmann::json& j) {
    if (Evaluated(j)) ends.evaluated = j;
    ends.last = std::move(j);
  });
  return ends;
}

uint64_t RoundsLog::Sum(const std::string& path, const char* key) {
  uint64_t sum = 0;
  ForEach(path, [&](nlohmann::json& j) {
    sum += static_cast<uint64_t>(Num(j, key));
  });
  return sum;
}

double RoundsLog::Num(const nlohmann::json& record, const char* key) {
  auto it = record.find(key);
  return it != record.end() && it->is_number() ? it->get<double>() : 0.0;
}

bool RoundsLog::Evaluated(const nlohmann::json& record) {
  auto e = record.find("evaluated");
  return e != record.end() && e->is_boolean() && e->get<bool>();
}

}  // namespace shefl
