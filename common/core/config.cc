#include "common/core/config.h"

#include "common/core/config_schema.h"

namespace shefl {

double ResourceRatio(const ExperimentConfig& c) {
  return c.compression.resource_ratio > 0
             ? c.compression.resource_ratio
             : static_cast<double>(c.model.num_models);
}

std::vector<std::string> ConfigKeys() {
  ExperimentConfig c;
  std::vector<std::string> keys;
  for (const config_schema::Field& f : config_schema::Fields(c))
    keys.push_back(f.key);
  return keys;
}

}  // namespace shefl
