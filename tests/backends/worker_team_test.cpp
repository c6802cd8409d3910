// WorkerTeam (backends/cpu/worker_team.h): the caller is always participant 0, helpers join as
// participants 1..helpers at most once per job each, run returns only after every joined call
// has returned, nested runs stay on their thread, and teams come and go while helpers spin.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <tbb/task_arena.h>

#include "backends/cpu/worker_team.h"

namespace oxi::backends {
namespace {

using Clock = std::chrono::steady_clock;

void busy_wait(std::chrono::microseconds d) {
  const auto end = Clock::now() + d;
  while (Clock::now() < end) {
  }
}

TEST(WorkerTeam, CallerIsParticipantZeroAndHelpersJoinOnce) {
  for (size_t helpers : {size_t{0}, size_t{1}, size_t{3}}) {
    tbb::task_arena arena(static_cast<int>(helpers + 1));
    WorkerTeam team(arena, helpers);
    EXPECT_EQ(team.helpers(), helpers);
    size_t jobs_with_helpers = 0;
    const auto give_up = Clock::now() + std::chrono::seconds(10);  // a loaded machine starts them late
    for (int round = 0;
         round < 200 || (helpers > 0 && jobs_with_helpers < 20 && Clock::now() < give_up);
         ++round) {
      std::mutex mutex;
      std::vector<size_t> participants;
      std::atomic<int> inside{0};
      std::atomic<int> finished{0};
      const auto caller = std::this_thread::get_id();
      team.run([&](size_t participant) {
        ++inside;
        if (participant == 0) {
          EXPECT_EQ(std::this_thread::get_id(), caller);
        } else {
          EXPECT_NE(std::this_thread::get_id(), caller);
        }
        busy_wait(std::chrono::microseconds(participant == 0 ? 200 : 20));
        {
          const std::lock_guard lock(mutex);
          participants.push_back(participant);
        }
        ++finished;
      });
      // Every call that started has returned.
      EXPECT_EQ(finished.load(), inside.load());
      const std::set<size_t> unique(participants.begin(), participants.end());
      EXPECT_EQ(unique.size(), participants.size()) << "a participant index twice";
      EXPECT_EQ(*unique.begin(), 0u);
      EXPECT_LE(*unique.rbegin(), helpers);
      if (participants.size() > 1) ++jobs_with_helpers;
    }
    // Helpers come from TBB's workers, which start when TBB gets to it (and there are only
    // hardware threads - 1 of them): some job has one, not every job.
    if (helpers == 0) {
      EXPECT_EQ(jobs_with_helpers, 0u);
    } else if (std::thread::hardware_concurrency() > 1) {
      EXPECT_GT(jobs_with_helpers, 0u);
    }
  }
}

TEST(WorkerTeam, NestedRunStaysOnItsThread) {
  tbb::task_arena arena(2);
  WorkerTeam team(arena, 1);
  for (int round = 0; round < 100; ++round) {
    std::atomic<int> nested_calls{0};
    team.run([&](size_t) {
      const auto outer = std::this_thread::get_id();
      team.run([&](size_t participant) {
        EXPECT_EQ(participant, 0u);
        EXPECT_EQ(std::this_thread::get_id(), outer);
        ++nested_calls;
      });
    });
    EXPECT_GE(nested_calls.load(), 1);
  }
}

TEST(WorkerTeam, TeamsComeAndGoWhileHelpersSpin) {
  tbb::task_arena arena(3);
  for (int round = 0; round < 50; ++round) {
    std::atomic<int> calls{0};
    {
      WorkerTeam team(arena, 2);
      for (int job = 0; job < 5; ++job) team.run([&](size_t) { ++calls; });
    }  // destroyed with its helpers still spinning: they see it and leave
    EXPECT_GE(calls.load(), 5);
  }
}

}  // namespace
}  // namespace oxi::backends
