// SVHN, cropped digits (Netzer et al. 2011): data.dataset "svhn" reads
// train_32x32.mat / test_32x32.mat from data.root, by default
// /usr/share/datasets/svhn (the two files directly inside). They are
// MATLAB level-5 MAT files (variables zlib-compressed or not) holding X,
// uint8 [32,32,3,N] in MATLAB's column-major order, and y, [N,1] labels
// 1..10 where 10 is the digit 0 and becomes label 0. The Dataset's x is
// float32 [N,3,32,32], (v/255 - mean)/std per channel with mean
// 0.4377,0.4438,0.4728 and std 0.1980,0.2010,0.1970; y int64 [N].
#ifndef SHEFL_COMMON_DATA_DATA_SVHN_H_
#define SHEFL_COMMON_DATA_DATA_SVHN_H_

#include <string>

#include "absl/status/statusor.h"
#include "common/data/dataset.h"

namespace shefl {

// One SVHN cropped-digits .mat file. Errors name the file and what is
// wrong: missing (NotFound), not a MAT v5 file or a v7.3 one, big-endian,
// truncated or corrupt compressed data (DataLoss), X or y missing, wrong
// dimensions or types, y's N not X's, a label outside 1..10.
absl::StatusOr<Dataset> ReadSvhnMat(const std::string& path);

}  // namespace shefl

#endif  // SHEFL_COMMON_DATA_DATA_SVHN_H_
