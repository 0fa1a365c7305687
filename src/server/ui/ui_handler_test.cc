// SPDX-License-Identifier: Apache-2.0
#include "server/ui/ui_handler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace warpscope::server::ui {
namespace {

using ::testing::Contains;
using ::testing::Pair;

// A table like the built one, sorted by path.
const web::Asset kTable[] = {
    {"assets/app-4F2KQ7XA.css", "body{}", 6, "00000000000000c5"},
    {"assets/app-4F2KQ7XA.js", "console.log(1)", 14, "00000000000000a1"},
    {"favicon.svg", "<svg/>", 6, "00000000000000f1"},
    {"index.html", "<!doctype html>", 15, "0000000000000001"},
};

std::string Header(const UiResponse& r, std::string_view name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}

TEST(ContentTypeForTest, KnownExtensions) {
  EXPECT_EQ(ContentTypeFor("index.html"), "text/html; charset=utf-8");
  EXPECT_EQ(ContentTypeFor("assets/app-X.js"), "text/javascript; charset=utf-8");
  EXPECT_EQ(ContentTypeFor("assets/app-X.CSS"), "text/css; charset=utf-8");
  EXPECT_EQ(ContentTypeFor("favicon.svg"), "image/svg+xml");
  EXPECT_EQ(ContentTypeFor("blob"), "application/octet-stream");
}

TEST(IsContentHashedTest, BundlerNamesOnly) {
  EXPECT_TRUE(IsContentHashed("assets/app-4F2KQ7XA.js"));
  EXPECT_FALSE(IsContentHashed("index.html"));
  EXPECT_FALSE(IsContentHashed("favicon.svg"));
  EXPECT_FALSE(IsContentHashed("assets/my-app.js"));  // too short to be a hash
}

TEST(ServeUiTest, RootIsIndexWithoutCaching) {
  UiResponse r = ServeUi(kTable, "/", "");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "<!doctype html>");
  EXPECT_EQ(r.content_type, "text/html; charset=utf-8");
  EXPECT_EQ(Header(r, "Cache-Control"), "no-cache");
  EXPECT_EQ(Header(r, "ETag"), "\"0000000000000001\"");
  EXPECT_NE(Header(r, "Content-Security-Policy"), "");
}

TEST(ServeUiTest, HashedAssetIsImmutable) {
  UiResponse r = ServeUi(kTable, "/assets/app-4F2KQ7XA.js", "");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "console.log(1)");
  EXPECT_EQ(r.content_type, "text/javascript; charset=utf-8");
  EXPECT_THAT(r.headers, Contains(Pair("Cache-Control", "public, max-age=31536000, immutable")));
}

TEST(ServeUiTest, MatchingIfNoneMatchIs304WithoutBody) {
  UiResponse r = ServeUi(kTable, "/favicon.svg", "\"zzz\", W/\"00000000000000f1\"");
  EXPECT_EQ(r.status, 304);
  EXPECT_TRUE(r.body.empty());
  EXPECT_EQ(Header(r, "ETag"), "\"00000000000000f1\"");
}

TEST(ServeUiTest, OtherIfNoneMatchGetsTheFile) {
  UiResponse r = ServeUi(kTable, "/favicon.svg", "\"00000000000000a1\"");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "<svg/>");
}

TEST(ServeUiTest, ViewPathsFallBackToIndex) {
  for (std::string_view path : {"/top", "/host/node1", "/host/node1.example.com", "/fleet/"}) {
    UiResponse r = ServeUi(kTable, path, "");
    EXPECT_EQ(r.status, 200) << path;
    EXPECT_EQ(r.body, "<!doctype html>") << path;
  }
}

TEST(ServeUiTest, ApiPathsAreNotTheUi) {
  EXPECT_EQ(ServeUi(kTable, "/api/v1/nope", "").status, 404);
  EXPECT_EQ(ServeUi(kTable, "/api", "").status, 404);
}

TEST(ServeUiTest, MissingBundleFileIs404NotHtml) {
  EXPECT_EQ(ServeUi(kTable, "/assets/app-OLDHASH1.js", "").status, 404);
  EXPECT_EQ(ServeUi(kTable, "/app.js", "").status, 404);
}

TEST(ServeUiTest, RefusesDotDot) {
  EXPECT_EQ(ServeUi(kTable, "/assets/../index.html", "").status, 404);
}

TEST(EmbeddedAssetsTest, IndexIsAlwaysEmbedded) {
  const web::Asset* index = web::FindAsset("index.html");
  ASSERT_NE(index, nullptr);
  EXPECT_NE(index->Data().find("<html"), std::string_view::npos);
  UiResponse r = ServeUi(web::Assets(), "/", "");
  EXPECT_EQ(r.status, 200);
}

TEST(EmbeddedAssetsTest, TableIsSortedWithEtags) {
  auto all = web::Assets();
  for (size_t i = 1; i < all.size(); ++i) EXPECT_LT(all[i - 1].Path(), all[i].Path());
  for (const auto& a : all) EXPECT_EQ(std::string_view(a.etag).size(), 16u) << a.path;
}

}  // namespace
}  // namespace warpscope::server::ui
