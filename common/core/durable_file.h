// Files a run relies on (checkpoints' neighbours, config.yaml, summary,
// keys): written whole or not at all, and on disk before we go on; and
// read back whole.
#ifndef SHEFL_COMMON_CORE_DURABLE_FILE_H_
#define SHEFL_COMMON_CORE_DURABLE_FILE_H_

#include <sys/types.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shefl {

// Writes `contents` to `path` + ".tmp" (mode `mode`), checking every
// write (short writes are retried), fsyncs it, renames it over `path` and
// fsyncs the directory, so a crash leaves the old file or the new one.
// Errors name the path and the system's reason.
absl::Status WriteFileDurably(const std::string& path,
                              const std::string& contents, mode_t mode = 0644);

// Appends `text` to `path` (created 0644 if missing) with checked writes
// and an fsync before returning, so a line reported written survives a
// crash (rounds.jsonl: the checkpoint that follows it relies on it).
absl::Status AppendDurably(const std::string& path, const std::string& text);

// fsync of the directory holding `path` (makes a rename or a new file
// durable). Errors name the directory.
absl::Status FsyncParentDir(const std::string& path);

// The bytes of `path`, whole; NotFound naming the path when it cannot be
// opened.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path);

}  // namespace shefl

#endif  // SHEFL_COMMON_CORE_DURABLE_FILE_H_
