// The daemon's task queue (client/task_queue.h): what the workers take
// next, when a round's line is due, and what a closed round or an ended
// session cancels.
#include "client/task_queue.h"

#include <chrono>
#include <future>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace shefl {
namespace {

v1::Task MakeTask(int64_t round, int64_t client, int models) {
  v1::Task t;
  t.set_round(round);
  t.set_client_id(client);
  for (int m = 0; m < models; ++m) t.add_models()->set_model_id(m);
  return t;
}

// What the listener saw, in order: "busy", "idle", "round N".
struct Events {
  std::vector<std::string> seen;
  TaskQueue::Listener Listener() {
    TaskQueue::Listener l;
    l.on_busy = [this](bool busy) { seen.push_back(busy ? "busy" : "idle"); };
    l.on_round_done = [this](int64_t r) {
      seen.push_back("round " + std::to_string(r));
    };
    return l;
  }
};

// The next item, named by its client id and model id ("3/1").
std::string TakeName(TaskQueue& q, std::vector<WorkItem>* taken) {
  std::optional<WorkItem> w = q.Take();
  REQUIRE(w.has_value());
  taken->push_back(*w);
  return std::to_string(w->task->client_id()) + "/" +
         std::to_string(w->model().model_id());
}

TEST_CASE("items run longest first within a round, never ahead of a round end") {
  Events ev;
  TaskQueue q(ev.Listener());
  q.Open(0);
  q.PushTask(MakeTask(1, 10, 1), 100);
  q.PushTask(MakeTask(1, 11, 2), 300);  // an HPC: two members
  q.PushTask(MakeTask(1, 12, 1), 200);
  q.PushTask(MakeTask(1, 13, 1), 200);  // ties keep arrival order
  q.PushRoundEnd(1);
  q.PushTask(MakeTask(2, 14, 1), 900);  // longer, but of the next round
  q.PushTask(MakeTask(1, 15, 0), 999);  // no models: nothing to run
  CHECK(q.queued() == 7);
  std::vector<WorkItem> taken;
  std::vector<std::string> order;
  for (int i = 0; i < 6; ++i) order.push_back(TakeName(q, &taken));
  CHECK(order == std::vector<std::string>{"11/0", "11/1", "12/0", "13/0",
                                          "10/0", "14/0"});
  // Round 1's end was taken before 14/0, but its items are in flight.
  CHECK(ev.seen == std::vector<std::string>{"busy"});
  for (int i = 0; i < 5; ++i) q.Done(taken[i]);
  CHECK(ev.seen == std::vector<std::string>{"busy", "round 1"});
  q.Done(taken[5]);
  CHECK(ev.seen == std::vector<std::string>{"busy", "round 1", "idle"});
  CHECK(q.queued() == 0);
}

TEST_CASE("a round's line waits for the items of earlier rounds too") {
  Events ev;
  TaskQueue q(ev.Listener());
  q.Open(0);
  q.PushTask(MakeTask(1, 1, 1), 5);
  std::vector<WorkItem> taken;
  TakeName(q, &taken);  // round 1's item, still in flight
  q.PushRoundEnd(1);
  q.PushTask(MakeTask(2, 2, 1), 5);
  q.PushRoundEnd(2);
  TakeName(q, &taken);  // takes round 1's end on the way to round 2's item
  q.Done(taken[1]);
  q.FlushRoundEnds();
  CHECK(ev.seen == std::vector<std::string>{"busy"});
  q.Done(taken[0]);  // now both: in round order
  CHECK(ev.seen == std::vector<std::string>{"busy", "idle", "round 1"});
  q.Close();
  CHECK_FALSE(q.Take().has_value());  // takes round 2's end on the way out
  CHECK(ev.seen ==
        std::vector<std::string>{"busy", "idle", "round 1", "round 2"});
}

TEST_CASE("a closed round cancels its items and an ended session drops the queue") {
  Events ev;
  TaskQueue q(ev.Listener());
  q.Open(3);  // the coordinator registered us in round 4
  CHECK(q.RoundClosed(3));
  CHECK_FALSE(q.RoundClosed(4));
  q.PushTask(MakeTask(4, 1, 2), 10);
  q.PushRoundEnd(4);
  CHECK(q.RoundClosed(4));  // whoever takes round 4's items skips them
  q.PushTask(MakeTask(5, 2, 1), 10);
  q.Close();
  // Nothing more runs, but round 4's end is honoured.
  CHECK_FALSE(q.Take().has_value());
  CHECK(ev.seen == std::vector<std::string>{"round 4"});
  CHECK(q.queued() == 0);
  // A new session takes tasks again.
  q.Open(5);
  q.PushTask(MakeTask(6, 3, 1), 10);
  std::vector<WorkItem> taken;
  CHECK(TakeName(q, &taken) == "3/0");
}

TEST_CASE("Take waits for work and wakes when the session ends") {
  TaskQueue q(TaskQueue::Listener{});
  q.Open(0);
  auto first = std::async(std::launch::async, [&q] { return q.Take(); });
  CHECK(first.wait_for(std::chrono::milliseconds(50)) ==
        std::future_status::timeout);
  q.PushTask(MakeTask(1, 7, 1), 1);
  REQUIRE(first.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  const std::optional<WorkItem> got = first.get();
  REQUIRE(got.has_value());
  CHECK(got->task->client_id() == 7);
  auto second = std::async(std::launch::async, [&q] { return q.Take(); });
  CHECK_FALSE(q.WaitClosed(std::chrono::milliseconds(20)));
  q.Close();
  REQUIRE(second.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK_FALSE(second.get().has_value());
  CHECK(q.WaitClosed(std::chrono::milliseconds(20)));
}

TEST_CASE("TakeRound takes a whole round, longest first, and not the next") {
  Events ev;
  TaskQueue q(ev.Listener());
  q.Open(0);
  q.PushTask(MakeTask(1, 10, 1), 100);
  q.PushTask(MakeTask(1, 11, 2), 300);
  q.PushRoundEnd(1);
  q.PushTask(MakeTask(2, 12, 1), 900);
  std::vector<WorkItem> round = q.TakeRound();
  REQUIRE(round.size() == 3);
  CHECK(round[0].task->client_id() == 11);
  CHECK(round[1].task->client_id() == 11);
  CHECK(round[2].task->client_id() == 10);
  // Round 1's line waits until every item of the batch is done.
  for (size_t i = 0; i < 2; ++i) q.Done(round[i]);
  std::vector<WorkItem> next = q.TakeRound();  // passes round 1's end
  CHECK(ev.seen == std::vector<std::string>{"busy"});
  q.Done(round[2]);
  CHECK(ev.seen == std::vector<std::string>{"busy", "round 1"});
  REQUIRE(next.size() == 1);
  CHECK(next[0].round() == 2);
  q.Done(next[0]);
  q.Close();
  CHECK(q.TakeRound().empty());
}

TEST_CASE("a task's summary comes from its last item, the loss over those sent") {
  TaskProgress p(3);
  CHECK_FALSE(p.Finish(true, 1.0).has_value());
  CHECK_FALSE(p.Finish(false, 0).has_value());
  const std::optional<TaskProgress::Summary> s = p.Finish(true, 2.0);
  REQUIRE(s.has_value());
  CHECK(s->sent == 2);
  CHECK(s->mean_loss == 1.5);
  CHECK(s->seconds >= 0);
  TaskProgress none(1);
  const auto all_failed = none.Finish(false, 7.0);
  REQUIRE(all_failed.has_value());
  CHECK(all_failed->sent == 0);
  CHECK(all_failed->mean_loss == 0);
}

}  // namespace
}  // namespace shefl
