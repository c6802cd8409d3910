// The matvecs' stream requests (kernels/formats/prefetch.h): steps that tile a range, at any
// alignment and in any number of parts, request each cache line that starts in it exactly once
// and each page start once more with hint 2, and nothing outside it.
#include <cstdint>
#include <map>
#include <utility>

#include <gtest/gtest.h>

#include "kernels/formats/prefetch.h"

namespace oxi::kernels {
namespace {

struct Recorded {
  std::map<uintptr_t, int> lines, pages;  // address -> times requested
  template <int kHint>
  void operator()(uintptr_t address, std::integral_constant<int, kHint>) {
    ++(kHint == 0 ? lines : pages)[address];
  }
};

// Checks what the steps covering [begin, end) requested.
void expect_each_once(const Recorded& r, uintptr_t begin, uintptr_t end) {
  size_t lines = 0, pages = 0;
  for (uintptr_t a = (begin + kCacheLine - 1) / kCacheLine * kCacheLine; a < end; a += kCacheLine) {
    ASSERT_EQ(r.lines.count(a), 1u) << "line " << a - begin << " bytes in";
    EXPECT_EQ(r.lines.at(a), 1) << "line " << a - begin << " bytes in";
    ++lines;
    if (a % kPageBytes == 0) {
      ASSERT_EQ(r.pages.count(a), 1u) << "page start " << a - begin << " bytes in";
      EXPECT_EQ(r.pages.at(a), 1);
      ++pages;
    }
  }
  EXPECT_EQ(r.lines.size(), lines) << "lines requested outside the range";
  EXPECT_EQ(r.pages.size(), pages) << "page starts requested outside the range";
}

template <size_t kSpan, size_t kParts>
void check_fixed_steps() {
  for (uintptr_t offset : {0, 1, 8, 32, 63, 64, 100, 4000, 4095}) {
    const uintptr_t begin = (uintptr_t{1} << 20) + offset, steps = 3 * kPageBytes / kSpan + 2;
    Recorded fixed, runtime;
    for (uintptr_t s = 0; s < steps; ++s) {
      for (size_t part = 0; part < kParts; ++part) {
        for_each_stream_request<kSpan, kParts>(begin + s * kSpan, part, fixed);
        for_each_stream_request(begin + s * kSpan, kSpan, part, kParts, runtime);
      }
    }
    SCOPED_TRACE("span " + std::to_string(kSpan) + " in " + std::to_string(kParts) +
                 " parts, range at " + std::to_string(offset) + " mod 4096");
    expect_each_once(fixed, begin, begin + steps * kSpan);
    expect_each_once(runtime, begin, begin + steps * kSpan);
  }
}

TEST(StreamPrefetch, FixedStepsRequestEachLineOnce) {
  check_fixed_steps<210, 1>();   // a q6_K block
  check_fixed_steps<272, 1>();   // half a q8_0_r16 group
  check_fixed_steps<288, 1>();   // a q4_0_r16 group
  check_fixed_steps<1152, 8>();  // a q4_K_r8 group, an eighth per sub-block
  check_fixed_steps<1152, 1>();
  check_fixed_steps<64, 1>();
  check_fixed_steps<4096, 3>();
}

TEST(StreamPrefetch, UnevenStepsRequestEachLineOnce) {
  // A q4_K_r8 row of 5632 columns: two whole groups, then a short one of 864 bytes.
  for (uintptr_t offset : {0, 16, 32, 48, 2000}) {
    const uintptr_t begin = (uintptr_t{1} << 20) + offset;
    const size_t sizes[] = {1152, 1152, 864, 1152, 1152, 864, 7, 1, 4096, 100};
    Recorded r;
    uintptr_t at = begin;
    for (size_t bytes : sizes) {
      for (size_t part = 0; part < 8; ++part) for_each_stream_request(at, bytes, part, 8, r);
      at += bytes;
    }
    SCOPED_TRACE("range at " + std::to_string(offset));
    expect_each_once(r, begin, at);
  }
}

}  // namespace
}  // namespace oxi::kernels
