// Where each data set's files come from, for the error a missing file gets
// (common/data/data.h: LoadDataset) and docs/RUNNING.md ("Data sets"):
// only Fashion-MNIST has a Debian package; the others are downloaded from
// their authors' pages and unpacked into the default folder or data.root.
#ifndef SHEFL_COMMON_DATA_DATA_SOURCES_H_
#define SHEFL_COMMON_DATA_DATA_SOURCES_H_

#include <string>

namespace shefl {

// "put <the files> in <root> (<how to get them>), or set data.root to the
// folder that holds them; docs/RUNNING.md (\"Data sets\")". Empty for a
// data set that needs no files (synthetic).
std::string DataSourceHint(const std::string& dataset, const std::string& root);

}  // namespace shefl

#endif  // SHEFL_COMMON_DATA_DATA_SOURCES_H_
