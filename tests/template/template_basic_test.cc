#include <gtest/gtest.h>

#include "template/chat_template.h"

namespace tessera {
namespace {

std::string render(std::string_view src, const nlohmann::json& ctx = nlohmann::json::object()) {
  auto t = ChatTemplate::parse(src);
  if (!t.ok()) return "PARSE ERROR: " + t.status().to_string();
  auto r = t->render(ctx);
  if (!r.ok()) return "RENDER ERROR: " + r.status().to_string();
  return *r;
}

TEST(TemplateBasic, Smoke) { EXPECT_EQ(render("Hello {{ name }}!", {{"name", "world"}}), "Hello world!"); }

}  // namespace
}  // namespace tessera
