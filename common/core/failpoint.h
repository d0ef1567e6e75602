// Crash-test failpoints: SHEFL_FAILPOINT=NAME[@N] makes the process kill
// itself with SIGKILL the N-th time (default: first) it passes the point
// NAME, e.g. just after the checkpoint's fsync. Tests use it to crash at
// the moments a random kill -9 rarely hits. Unset, a failpoint costs one
// comparison of a cached pointer.
#ifndef SHEFL_COMMON_CORE_FAILPOINT_H_
#define SHEFL_COMMON_CORE_FAILPOINT_H_

namespace shefl {

// The points the coordinator passes, in the order it passes them at the
// end of a round (tests iterate over these).
inline constexpr const char* kFailpoints[] = {
    "rounds.after_append",        // the round's line is on disk
    "checkpoint.before_write",    // the temporary file is open and empty
    "checkpoint.after_write",     // written, not yet fsynced
    "checkpoint.after_fsync",     // fsynced, not yet renamed
    "checkpoint.after_rename",    // renamed, directory not yet fsynced
    "checkpoint.after_dir_fsync"  // the round is durable
};

void Failpoint(const char* name);

}  // namespace shefl

#endif  // SHEFL_COMMON_CORE_FAILPOINT_H_
