#include "client/model_cache.h"

#include "common/core/mutex.h"

namespace shefl {

ModelCache::Entry* ModelCache::EntryFor(int64_t model, uint64_t version) {
  auto it = by_model_.find(model);
  if (it == by_model_.end() || it->second.version < version) {
    Entry fresh;
    fresh.version = version;
    it = by_model_.insert_or_assign(model, std::move(fresh)).first;
  }
  return it->second.version == version ? &it->second : nullptr;
}

void ModelCache::Expect(int64_t model, uint64_t version, int64_t client) {
  MutexLock lock(mu_);
  if (Entry* e = EntryFor(model, version)) e->expected.insert(client);
}

absl::StatusOr<ModelCache::Weights> ModelCache::Get(int64_t model,
                                                    uint64_t version,
                                                    int64_t client,
                                                    const Fetch& fetch) {
  std::promise<absl::StatusOr<Weights>> mine;
  std::vector<int64_t> also_for;
  Result served;  // set when another fetch covers this client
  {
    MutexLock lock(mu_);
    Entry* e = EntryFor(model, version);
    if (e != nullptr) {  // else a stale version: fetched alone, not kept
      if (auto it = e->covered.find(client); it != e->covered.end()) {
        served = it->second;
      } else {
        Result r = mine.get_future().share();
        e->covered[client] = r;
        for (int64_t c : e->expected) {
          if (c == client || e->covered.count(c)) continue;
          also_for.push_back(c);
          e->covered[c] = r;
        }
      }
    }
    if (!served.valid()) ++fetches_;
  }
  if (served.valid()) return served.get();  // waits outside mu_
  absl::StatusOr<Weights> out = fetch(also_for);
  if (!out.ok()) {
    // A failed fetch is not kept: whoever needs the version next fetches
    // again (those waiting on this one get its error).
    MutexLock lock(mu_);
    if (Entry* e = EntryFor(model, version)) {
      e->covered.erase(client);
      for (int64_t c : also_for) e->covered.erase(c);
    }
  }
  mine.set_value(out);
  return out;
}

void ModelCache::Clear() {
  MutexLock lock(mu_);
  by_model_.clear();
}

int64_t ModelCache::fetches() const {
  MutexLock lock(mu_);
  return fetches_;
}

}  // namespace shefl
