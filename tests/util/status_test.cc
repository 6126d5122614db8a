#include "util/status.h"

#include <gtest/gtest.h>

#include "util/result.h"

namespace pstrain {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0)
    return InvalidArgument("odd: " + std::to_string(x));
  return x / 2;
}

Status Quarter(int x, int* out) {
  PS_ASSIGN_OR_RETURN(int h, Half(x));
  PS_ASSIGN_OR_RETURN(*out, Half(h));
  return Status::Ok();
}

TEST(StatusTest, ToStringNamesCodeAndMessage) {
  EXPECT_EQ(Status::Ok().ToString(), "ok");
  EXPECT_EQ(Corruption("bad magic").ToString(), "corruption: bad magic");
  EXPECT_EQ(Timeout("x").WithContext("rank 2").message(), "rank 2: x");
  EXPECT_TRUE(Status::Ok().WithContext("ctx").ok());
}

TEST(ResultTest, PropagatesFirstError) {
  int q = 0;
  EXPECT_TRUE(Quarter(8, &q).ok());
  EXPECT_EQ(q, 2);
  Status s = Quarter(6, &q);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "odd: 3");
}

TEST(StatusTest, CorruptionAsInvalidArgumentRemapsOnlyCorruption) {
  Status s = CorruptionAsInvalidArgument(Corruption("x.idx: bad magic"));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "x.idx: bad magic");
  EXPECT_EQ(CorruptionAsInvalidArgument(NotFound("x")).code(),
            StatusCode::kNotFound);
  EXPECT_TRUE(CorruptionAsInvalidArgument(Status::Ok()).ok());
  Result<int> bad = CorruptionAsInvalidArgument(Result<int>(Corruption("y")));
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "y");
  EXPECT_EQ(CorruptionAsInvalidArgument(Half(4)).value(), 2);
  EXPECT_EQ(CorruptionAsInvalidArgument(Half(3)).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pstrain
