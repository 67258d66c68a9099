#include "webui/web_assets.h"

#include <gtest/gtest.h>

#include <string>

namespace tessera::webui {
namespace {

TEST(WebAssets, RootIsTheEmbeddedIndexPage) {
  auto page = find_web_asset("/");
  ASSERT_TRUE(page.has_value());
  EXPECT_EQ(page->content_type, "text/html; charset=utf-8");
  EXPECT_EQ(page->data.substr(0, 15), "<!doctype html>");
  EXPECT_NE(page->data.find("webui/app.js"), std::string_view::npos);
  auto same = find_web_asset("/index.html");
  ASSERT_TRUE(same.has_value());
  EXPECT_EQ(same->data.data(), page->data.data());
}

TEST(WebAssets, EveryFileTheIndexNamesIsServed) {
  for (const char* name : {"app.js", "markdown.js", "sampling.js", "sse.js", "storage.js", "style.css"}) {
    auto a = find_web_asset(std::string("/webui/") + name);
    ASSERT_TRUE(a.has_value()) << name;
    EXPECT_GT(a->data.size(), 100u) << name;
  }
  EXPECT_EQ(find_web_asset("/webui/app.js")->content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(find_web_asset("/webui/style.css")->content_type, "text/css; charset=utf-8");
  // The generated table holds the bytes of the files, nothing more.
  EXPECT_EQ(find_web_asset("/webui/sse.js")->data.back(), '\n');
}

TEST(WebAssets, OtherPathsAreNotAssets) {
  for (const char* p : {"", "/webui/", "/webui", "/webui/index.html", "/webui/../app.js", "/webui/nope.js", "/app.js",
                        "/v1/models", "/webui/app.js/", "//", "/webui//app.js"}) {
    EXPECT_FALSE(find_web_asset(p).has_value()) << p;
  }
}

TEST(WebAssets, ContentTypeByExtension) {
  EXPECT_EQ(content_type_for("a.html"), "text/html; charset=utf-8");
  EXPECT_EQ(content_type_for("x.svg"), "image/svg+xml");
  EXPECT_EQ(content_type_for("js"), "application/octet-stream");
  EXPECT_EQ(content_type_for(""), "application/octet-stream");
}

}  // namespace
}  // namespace tessera::webui
