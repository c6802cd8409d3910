// ModelCache: one load per key while a user holds the model, concurrent loads of one key run
// the loader once, failures are not remembered, models are freed with their last user.
#include "lib/core/model_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

struct FakeModel {
  int id;
};

TEST(ModelCache, SameKeySharesOneCopyDifferentKeysDoNot) {
  oxi::ModelCache<FakeModel> cache;
  int loads = 0;
  auto load = [&] { return std::make_shared<const FakeModel>(FakeModel{++loads}); };
  auto a = cache.get("m:q8", load);
  auto b = cache.get("m:q8", load);
  auto c = cache.get("m:q4", load);
  EXPECT_EQ(a.get(), b.get());
  EXPECT_NE(a.get(), c.get());
  EXPECT_EQ(loads, 2);
  EXPECT_EQ(cache.live_count(), 2u);
}

TEST(ModelCache, ModelIsFreedWithItsLastUserAndReloaded) {
  oxi::ModelCache<FakeModel> cache;
  int loads = 0;
  auto load = [&] { return std::make_shared<const FakeModel>(FakeModel{++loads}); };
  std::weak_ptr<const FakeModel> weak;
  {
    auto a = cache.get("m", load);
    weak = a;
    EXPECT_NE(cache.find("m"), nullptr);
  }
  EXPECT_TRUE(weak.expired());
  EXPECT_EQ(cache.find("m"), nullptr);
  EXPECT_EQ(cache.live_count(), 0u);
  auto again = cache.get("m", load);
  EXPECT_EQ(again->id, 2);
}

TEST(ModelCache, FailedLoadIsReportedAndNotRemembered) {
  oxi::ModelCache<FakeModel> cache;
  EXPECT_THROW(cache.get("bad",
                         []() -> std::shared_ptr<const FakeModel> {
                           throw std::runtime_error("no such file");
                         }),
               std::runtime_error);
  auto ok = cache.get("bad", [] { return std::make_shared<const FakeModel>(FakeModel{7}); });
  EXPECT_EQ(ok->id, 7);
}

TEST(ModelCache, ConcurrentGetsOfOneKeyLoadOnce) {
  oxi::ModelCache<FakeModel> cache;
  std::atomic<int> loads{0};
  auto load = [&] {
    ++loads;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the others arrive
    return std::make_shared<const FakeModel>(FakeModel{1});
  };
  std::vector<std::shared_ptr<const FakeModel>> got(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i)
    threads.emplace_back([&, i] { got[i] = cache.get("shared", load); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(loads.load(), 1);
  for (const auto& m : got) EXPECT_EQ(m.get(), got[0].get());
}

TEST(ModelCache, ConcurrentWaitersSeeTheLoadersException) {
  oxi::ModelCache<FakeModel> cache;
  std::atomic<int> loads{0}, failures{0};
  auto load = [&]() -> std::shared_ptr<const FakeModel> {
    ++loads;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    throw std::runtime_error("corrupt");
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&] {
      try {
        cache.get("k", load);
      } catch (const std::runtime_error&) {
        ++failures;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 4);
  EXPECT_GE(loads.load(), 1);
}

}  // namespace
