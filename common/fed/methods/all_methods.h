// One accessor per method file, for registry.cc's table. Internal to
// common/fed/methods.
#ifndef SHEFL_COMMON_FED_METHODS_ALL_METHODS_H_
#define SHEFL_COMMON_FED_METHODS_ALL_METHODS_H_

#include "common/fed/methods/method.h"

namespace shefl {

const Method& ShEFLMethod();         // shefl.cc
const Method& FedEnsembleMethod();   // fedensemble.cc
const Method& FedAvgMethod();        // fedavg.cc
const Method& FedProxMethod();       // fedprox.cc
const Method& FensMethod();          // fens.cc
const Method& HasaMethod();          // hasa.cc
const Method& FedAvgMMethod();       // fedavgm.cc
const Method& FedAdamMethod();       // fedadam.cc

// Shared by the one-model methods (fedavg, fedprox, fedavgm, fedadam).
void PinOneModel(ConfigResolution& r);

}  // namespace shefl

#endif  // SHEFL_COMMON_FED_METHODS_ALL_METHODS_H_
