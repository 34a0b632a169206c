// IsOk: a gtest predicate for a Status or a StatusOr that prints the failure's message, so a
// test reads ASSERT_TRUE(IsOk(writer->Close())) instead of naming a variable for the message.
#ifndef CTXPROF_TESTS_SUPPORT_STATUS_TESTING_H_
#define CTXPROF_TESTS_SUPPORT_STATUS_TESTING_H_

#include <gtest/gtest.h>

#include "profiler/base/status.h"

namespace ctxprof {

inline ::testing::AssertionResult IsOk(const Status& status) {
  if (status.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << status.message();
}

template <typename T>
::testing::AssertionResult IsOk(const StatusOr<T>& status_or) {
  return status_or.ok() ? ::testing::AssertionSuccess() : IsOk(status_or.status());
}

}  // namespace ctxprof

#endif  // CTXPROF_TESTS_SUPPORT_STATUS_TESTING_H_
