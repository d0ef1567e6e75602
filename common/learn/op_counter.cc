#include "common/learn/op_counter.h"

#include <ATen/record_function.h>

#include <algorithm>
#include <atomic>
#include <memory>

#include "common/core/mutex.h"

namespace shefl {
namespace {

// RecordFunction takes plain function pointers, so the tallies are global;
// each counter reads the difference over its lifetime. The callback is
// registered once while any counter lives: an op that started under it
// runs its end callback even after removal, so the depths stay balanced.
std::atomic<int64_t> g_top{0};
std::atomic<int64_t> g_all{0};
std::atomic<int> g_by_name{0};  // live counters that want names
thread_local int t_depth = 0;   // ops open on this thread

Mutex g_mu;
int g_live ABSL_GUARDED_BY(g_mu) = 0;
at::CallbackHandle g_handle ABSL_GUARDED_BY(g_mu) =
    at::INVALID_CALLBACK_HANDLE;
// Never freed: a callback still running at exit must find them.
OpCounter::Tally* const g_top_names ABSL_PT_GUARDED_BY(g_mu) =
    new OpCounter::Tally();
OpCounter::Tally* const g_all_names ABSL_PT_GUARDED_BY(g_mu) =
    new OpCounter::Tally();

// The dispatcher records an op with its schema; a record by a plain
// string (the autograd engine's per node) has no operator name.
bool IsOp(const at::RecordFunction& fn) {
  return fn.operator_name().has_value();
}

std::unique_ptr<at::ObserverContext> OnStart(const at::RecordFunction& fn) {
  if (!IsOp(fn)) return nullptr;
  const bool top = t_depth++ == 0;
  if (top) g_top.fetch_add(1, std::memory_order_relaxed);
  g_all.fetch_add(1, std::memory_order_relaxed);
  if (g_by_name.load(std::memory_order_relaxed) > 0) {
    MutexLock lock(g_mu);
    if (top) ++(*g_top_names)[fn.name()];
    ++(*g_all_names)[fn.name()];
  }
  return nullptr;
}

void OnEnd(const at::RecordFunction& fn, at::ObserverContext*) {
  if (IsOp(fn) && t_depth > 0) --t_depth;
}

OpCounts Now() { return {g_top.load(), g_all.load()}; }

}  // namespace

OpCounter::OpCounter(bool by_name) : by_name_(by_name) {
  was_enabled_ = at::isRecordFunctionEnabled();
  at::enableRecordFunction(true);
  MutexLock lock(g_mu);
  if (g_live++ == 0) {
    g_handle = at::addGlobalCallback(
        at::RecordFunctionCallback(&OnStart, &OnEnd)
            .scopes({at::RecordScope::FUNCTION}));
  }
  if (by_name_) {
    g_by_name.fetch_add(1);
    top_start_ = *g_top_names;
    all_start_ = *g_all_names;
  }
  start_ = Now();
}

OpCounter::~OpCounter() { Stop(); }

void OpCounter::Stop() {
  if (!running_) return;
  running_ = false;
  end_ = Now();
  {
    MutexLock lock(g_mu);
    if (by_name_) {
      g_by_name.fetch_sub(1);
      top_end_ = *g_top_names;
      all_end_ = *g_all_names;
    }
    if (--g_live == 0) {
      at::removeCallback(g_handle);
      g_handle = at::INVALID_CALLBACK_HANDLE;
    }
  }
  at::enableRecordFunction(was_enabled_);
}

OpCounts OpCounter::counts() const {
  const OpCounts end = running_ ? Now() : end_;
  return {end.top_level - start_.top_level, end.all - start_.all};
}

std::vector<std::pair<std::string, int64_t>> OpCounter::ByName(
    bool top_level) const {
  Tally end;
  if (running_ && by_name_) {
    MutexLock lock(g_mu);
    end = top_level ? *g_top_names : *g_all_names;
  } else {
    end = top_level ? top_end_ : all_end_;
  }
  const Tally& start = top_level ? top_start_ : all_start_;
  std::vector<std::pair<std::string, int64_t>> out;
  for (const auto& [name, n] : end) {
    auto it = start.find(name);
    const int64_t d = n - (it == start.end() ? 0 : it->second);
    if (d > 0) out.emplace_back(name, d);
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.second > b.second;
  });
  return out;
}

}  // namespace shefl
