// SPDX-License-Identifier: Apache-2.0
#include "server/ingest/request_body.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "warpscope/v1/batch.pb.h"

namespace warpscope::server {
namespace {

using ::testing::HasSubstr;

constexpr BodyMessage kNames{.what = "thing",
                             .size_note = " raw",
                             .protobuf = "warpscope.v1.Batch message",
                             .json = "JSON for warpscope.v1.Batch"};

TEST(BodyEncodingTest, ProtobufAndJsonWithParametersAreRecognised) {
  EXPECT_EQ(*BodyEncodingOf("application/x-protobuf"), BodyEncoding::kProtobuf);
  EXPECT_EQ(*BodyEncodingOf("application/json; charset=utf-8"), BodyEncoding::kJson);
}

TEST(BodyEncodingTest, OtherTypesAreUnsupportedAndNamed) {
  auto r = BodyEncodingOf("text/plain", " (OTLP/HTTP)");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), base::StatusCode::kUnsupported);
  EXPECT_EQ(r.error().message(),
            "Content-Type must be application/x-protobuf or application/json (OTLP/HTTP), got "
            "'text/plain'");
  EXPECT_FALSE(BodyEncodingOf(""));
}

TEST(ParseProtobufBodyTest, ParsesAMessage) {
  warpscope::v1::Batch in;
  in.set_agent_id("a");
  in.set_sequence(7);
  warpscope::v1::Batch out;
  ASSERT_TRUE(ParseProtobufBody(in.SerializeAsString(), out, kNames).ok());
  EXPECT_EQ(out.agent_id(), "a");
  EXPECT_EQ(out.sequence(), 7u);
}

TEST(ParseProtobufBodyTest, GarbageNamesTheSizeAndTheMessage) {
  warpscope::v1::Batch out;
  base::Status s = ParseProtobufBody("\xff\xff\xff", out, kNames);
  EXPECT_EQ(s.code(), base::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "thing: the body (3 bytes raw) is not a valid warpscope.v1.Batch message");
}

TEST(ParseJsonBodyTest, IgnoresUnknownFieldsAndTakesBothNameStyles) {
  warpscope::v1::Batch out;
  ASSERT_TRUE(
      ParseJsonBody(R"({"agentId": "a", "start_unix_nano": "5", "future": 1})", out, kNames).ok());
  EXPECT_EQ(out.agent_id(), "a");
  EXPECT_EQ(out.start_unix_nano(), 5);
}

TEST(ParseJsonBodyTest, BadJsonQuotesTheParser) {
  warpscope::v1::Batch out;
  base::Status s = ParseJsonBody("{not json", out, kNames);
  EXPECT_EQ(s.code(), base::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("thing: the body is not valid JSON for warpscope.v1.Batch: "));
}

}  // namespace
}  // namespace warpscope::server
