// Hostile or broken templates and inputs: errors with positions, never a
// crash, a hang or unbounded memory.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "template/chat_template.h"

namespace tessera {
namespace {

Status parse_status(std::string_view src) {
  auto t = ChatTemplate::parse(src);
  return t.ok() ? Status() : t.status();
}

Status render_status(std::string_view src, const nlohmann::json& ctx = nlohmann::json::object()) {
  auto t = ChatTemplate::parse(src);
  if (!t.ok()) return t.status();
  auto r = t->render(ctx);
  return r.ok() ? Status() : r.status();
}

TEST(TemplateRobustness, MalformedTemplatesFailWithPositions) {
  const char* const kBad[] = {
      "{%", "{{", "{#", "{% if %}", "{% if x %}", "{% for %}", "{% for x %}", "{% for x in %}{% endfor %}",
      "{% set %}", "{% set x %}", "{% set x = %}", "{% macro %}", "{% macro f( %}", "{{ x. }}", "{{ x[ }}",
      "{{ x[1 }}", "{{ f(a=) }}", "{{ [1, 2 }}", "{{ {'a' 1} }}", "{{ x | }}", "{{ x is }}", "{% endfor %}",
      "{% else %}", "{% elif x %}", "{% if x %}{% else %}{% else %}{% endif %}", "{{ 'unterminated }}",
      "{{ \"\\x4\" }}", "{{ 99999999999999999999 }}", "{% raw %}x{% endraw %}", "{% extends 'x' %}",
      "{{ x }", "{{ } }}", "{% if x %}{% endfor %}", "{{ x if }}", "{{ not }}", "{% for x in y if %}{% endfor %}",
      "}}{{", "{{ @ }}", "{{ 1 2 }}",
  };
  for (const char* src : kBad) {
    const Status st = parse_status(src);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << src;
    EXPECT_NE(st.message().find("line "), std::string::npos) << src << " -> " << st.message();
  }
}

TEST(TemplateRobustness, EveryPrefixOfARealTemplateIsHandled) {
  const std::string src =
      "{%- set ns = namespace(i=0) %}{% for m in messages if m.role != 'x' -%}\n"
      "  {{- '<|' ~ m['role'] ~ '|>' + (m.content | trim) }}{# c #}{% set ns.i = ns.i + 1 %}\n"
      "{%- else %}none{% endfor %}{{ ns.i if add_generation_prompt else {'a': [1, 2.5]}|tojson }}";
  nlohmann::json ctx = {{"messages", {{{"role", "user"}, {"content", " hi "}}}}, {"add_generation_prompt", true}};
  ASSERT_TRUE(render_status(src, ctx).ok());
  for (size_t n = 0; n <= src.size(); ++n) {
    auto t = ChatTemplate::parse(src.substr(0, n));
    if (t.ok()) (void)t->render(ctx);
  }
}

TEST(TemplateRobustness, DeepNestingIsBounded) {
  std::string ifs;
  for (int i = 0; i < 1000; ++i) ifs += "{% if true %}";
  EXPECT_EQ(parse_status(ifs).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parse_status(std::string(100000, '(')).code(), StatusCode::kOk);  // plain text
  EXPECT_EQ(parse_status("{{ " + std::string(100000, '(') + " }}").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parse_status("{{ " + std::string(100000, '[') + " }}").code(), StatusCode::kInvalidArgument);
  std::string nots = "{{ ";
  for (int i = 0; i < 100000; ++i) nots += "not ";
  EXPECT_EQ(parse_status(nots + "x }}").code(), StatusCode::kInvalidArgument);
  std::string negs = "{{ " + std::string(100000, '-') + "1 }}";
  EXPECT_EQ(parse_status(negs).code(), StatusCode::kInvalidArgument);
}

TEST(TemplateRobustness, DeepInputJsonIsRejected) {
  nlohmann::json deep = 1;
  for (int i = 0; i < 1000; ++i) deep = nlohmann::json::array({deep});
  EXPECT_EQ(render_status("{{ x }}", {{"x", deep}}).code(), StatusCode::kResourceExhausted);
}

TEST(TemplateRobustness, BuiltValuesCannotNestWithoutBound) {
  EXPECT_EQ(render_status("{% set ns = namespace(x=1) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}"
                          "{% endfor %}{{ ns.x }}")
                .code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(render_status("{% set ns = namespace() %}{% set ns.self = ns %}").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(render_status("{% set ns = namespace() %}{% set ns.l = [ns] %}").code(), StatusCode::kInvalidArgument);
}

TEST(TemplateRobustness, OutputAndWorkAreCapped) {
  EXPECT_EQ(render_status("{% for i in range(1000000) %}{% for j in range(1000000) %}{% endfor %}{% endfor %}").code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(render_status("{% for i in range(1000000) %}{{ 'x' * 100 }}{% endfor %}").code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(render_status("{{ 'x' * 1000000000 }}").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(render_status("{{ range(100000000)|length }}").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(render_status("{{ [1] * 100000000 }}").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(render_status("{% set ns = namespace(s='xxxxxxxxxxxxxxxx') %}{% for i in range(64) %}"
                          "{% set ns.s = ns.s ~ ns.s %}{% endfor %}")
                .code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(render_status("{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = [ns.l, ns.l] %}"
                          "{% endfor %}{{ ns.l }}")
                .code(),
            StatusCode::kResourceExhausted);
}

TEST(TemplateRobustness, MacroRecursionIsBounded) {
  EXPECT_EQ(render_status("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").code(),
            StatusCode::kResourceExhausted);
  auto t = ChatTemplate::parse("{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}");
  ASSERT_TRUE(t.ok());
  auto r = t->render(nlohmann::json::object());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(*r, "321");
}

TEST(TemplateRobustness, ArithmeticEdgeCases) {
  EXPECT_EQ(render_status("{{ 9223372036854775807 + 1 }}").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(render_status("{{ -9223372036854775807 - 2 }}").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(render_status("{{ 2 ** 64 }}").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(render_status("{{ 1.0 / 0 }}").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(render_status("{{ [1, 2][::0] }}").code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(render_status("{{ [1, 2][-100:100:-3] }}{{ 'abc'[100:] }}{{ x[1:2] }}").ok());
  EXPECT_TRUE(render_status("{{ range(9223372036854775800, 9223372036854775807, 3)|list }}").ok());
}

TEST(TemplateRobustness, InvalidUtf8AndBinaryInputDoNotCrash) {
  nlohmann::json ctx = {{"s", std::string("a\xff\xfe\xc3", 4)}};
  EXPECT_TRUE(render_status("{{ s }}{{ s|length }}{{ s[1] }}{{ s[::-1] }}{{ s|upper }}{{ s|title }}", ctx).ok());
  EXPECT_TRUE(render_status("{{ s|tojson }}{{ s|tojson(ensure_ascii=true) }}", ctx).ok());
  static const char kBinary[] = "{{ '\0' }}\xff{% if true %}\x80{% endif %}";
  EXPECT_EQ(render_status(std::string(kBinary, sizeof(kBinary) - 1)).code(), StatusCode::kOk);
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

Status render_with_limit(std::string_view src, int64_t time_limit_ms) {
  ChatTemplateOptions o;
  o.render_time_limit_ms = time_limit_ms;
  auto t = ChatTemplate::parse(src, o);
  if (!t.ok()) return t.status();
  auto r = t->render(nlohmann::json::object());
  return r.ok() ? Status() : r.status();
}

TEST(TemplateLimits, SlowTemplateStopsAtTheTimeLimit) {
  // Few evaluation steps, each a 4 MB string operation: only the clock stops it.
  const auto t0 = std::chrono::steady_clock::now();
  const Status st = render_with_limit(
      "{% set s = 'x' * 4000000 %}{% for i in range(100000) %}{% set t = s.replace('x', 'yy') %}{% endfor %}", 100);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(st.message().find("time limit (100 ms)"), std::string::npos) << st.message();
  EXPECT_LT(ms, 5000) << "the limit must stop the render soon after 100 ms";
}

TEST(TemplateLimits, LoopIterationsAreCapped) {
  // (A generous clock, so that only the iteration count can stop these.)
  const Status st =
      render_with_limit("{% for i in range(1000) %}{% for j in range(1001) %}{% endfor %}{% endfor %}", 600000);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(st.message().find("loops exceeded 1000000 iterations"), std::string::npos) << st.message();
  // Just under the cap renders.
  const Status under =
      render_with_limit("{% for i in range(1000) %}{% for j in range(999) %}{% endfor %}{% endfor %}", 600000);
  EXPECT_TRUE(under.ok()) << under.to_string();
}

TEST(TemplateLimits, DeepNestingInsideRecursionIsBoundedNotAStackOverflow) {
  std::string body;
  for (int i = 0; i < 120; ++i) body += "{% if true %}";
  body += "{{ f(n - 1) }}";
  for (int i = 0; i < 120; ++i) body += "{% endif %}";
  const Status st = render_status("{% macro f(n) %}" + body + "{% endmacro %}{{ f(1000) }}");
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(st.message().find("nested too deeply"), std::string::npos) << st.message();
}

TEST(TemplateLimits, EveryLimitIsAnErrorFromRenderTaggedToo) {
  auto t = ChatTemplate::parse("{% for m in messages %}{% for i in range(1000000) %}{{ m }}{% endfor %}{% endfor %}");
  ASSERT_TRUE(t.ok());
  auto r = t->render_tagged({{"messages", {std::string(100, 'x')}}}, nlohmann::ordered_json::object());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status().to_string();
}

}  // namespace
}  // namespace tessera
