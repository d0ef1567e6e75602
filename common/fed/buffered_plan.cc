#include "common/fed/buffered_plan.h"

#include "absl/strings/str_cat.h"
#include "common/fed/update_buffer.h"

namespace shefl {

void CheckBuffered(ConfigResolution& r) {
  const ExperimentConfig& c = r.config();
  if (auto rule = ParseStaleness(c.buffered.staleness); !rule.ok())
    r.Refuse("buffered.staleness", std::string(rule.status().message()));
  if (c.round.mode != "buffered") return;
  if (c.aggregation.secure != "off")
    r.Refuse("aggregation.secure",
             "secure aggregation has no buffered rounds yet (a buffer would "
             "need a session of its own); set aggregation.secure: off or "
             "round.mode: synchronous",
             {"round.mode"});
  if (c.privacy.mode != "off")
    r.Refuse("privacy.mode",
             "the privacy accountant counts synchronous rounds; set "
             "privacy.mode: off or round.mode: synchronous",
             {"round.mode"});
  if (c.method == "fens")
    r.Refuse("round.mode",
             "fens trains each client once, in one round: it has nothing to "
             "buffer",
             {"method"});
  if (c.aggregation.rule == "paper" || c.aggregation.rule == "paper_per_model")
    r.Refuse("aggregation.rule",
             absl::StrCat("rule ", c.aggregation.rule,
                          " counts every update once, so a buffer could not "
                          "weigh a stale one less; use workload_aware or "
                          "uniform with round.mode: buffered"),
             {"round.mode"});
  if (c.clients.over_selection > 0)
    r.Refuse("clients.over_selection",
             "a buffered run hands out the next task as soon as a slot is "
             "free; it has no round to over-select for",
             {"round.mode"});
  if (BufferSize(c) > BufferConcurrency(c))
    r.Refuse("buffered.size",
             absl::StrCat("a buffer of ", BufferSize(c),
                          " updates could never fill with ",
                          BufferConcurrency(c),
                          " tasks in flight (buffered.concurrency)"),
             {"buffered.concurrency"});
}

}  // namespace shefl
