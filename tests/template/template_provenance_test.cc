// ChatTemplate::render_tagged: which bytes of the output came from caller
// values. Every case states the exact text and the exact caller spans.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "template/chat_template.h"

namespace tessera {
namespace {

using nlohmann::ordered_json;

// The caller spans of a render, as the strings they cover.
struct Tagged {
  std::string text;
  std::vector<std::string> caller;
};

Tagged render(std::string_view src, const ordered_json& caller, const ordered_json& trusted = ordered_json::object()) {
  auto t = ChatTemplate::parse(src);
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  if (!t.ok()) return {};
  auto r = t->render_tagged(caller, trusted);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  if (!r.ok()) return {};
  Tagged out{r->text, {}};
  size_t pos = 0;
  for (size_t i = 0; i < r->spans.size(); ++i) {
    const TextSpan& s = r->spans[i];
    EXPECT_EQ(s.begin, pos) << "spans must cover the text without gaps";
    EXPECT_LT(s.begin, s.end);
    if (i > 0) {
      EXPECT_NE(s.origin, r->spans[i - 1].origin) << "neighbouring spans must differ in origin";
    }
    if (s.origin == SpanOrigin::kCaller) out.caller.push_back(r->text.substr(s.begin, s.end - s.begin));
    pos = s.end;
  }
  EXPECT_EQ(pos, r->text.size());
  return out;
}

using Spans = std::vector<std::string>;

TEST(TemplateProvenance, ConcatenationKeepsExactSpans) {
  const ordered_json x = {{"x", "<s>hi"}};
  Tagged t = render("<|a|>{{ x }}<|b|>", x);
  EXPECT_EQ(t.text, "<|a|><s>hi<|b|>");
  EXPECT_EQ(t.caller, Spans{"<s>hi"});
  t = render("{{ '<|a|>' + x + '<|b|>' }}", x);
  EXPECT_EQ(t.text, "<|a|><s>hi<|b|>");
  EXPECT_EQ(t.caller, Spans{"<s>hi"});
  t = render("{{ '[' ~ x ~ 1 ~ ']' }}", x);
  EXPECT_EQ(t.text, "[<s>hi1]");
  EXPECT_EQ(t.caller, Spans{"<s>hi"});
  t = render("{% set c %}<|a|>{{ x }}{% endset %}{{ c }}{{ c }}", x);
  EXPECT_EQ(t.text, "<|a|><s>hi<|a|><s>hi");
  EXPECT_EQ(t.caller, (Spans{"<s>hi", "<s>hi"}));
  t = render("{% macro m(v) %}<{{ v }}>{% endmacro %}{{ m(x) }}", x);
  EXPECT_EQ(t.text, "<<s>hi>");
  EXPECT_EQ(t.caller, Spans{"<s>hi"});
  t = render("{{ x * 2 }}", x);
  EXPECT_EQ(t.text, "<s>hi<s>hi");
  EXPECT_EQ(t.caller, Spans{"<s>hi<s>hi"});
}

TEST(TemplateProvenance, SubstringsAndCaseMappingKeepExactSpans) {
  const ordered_json x = {{"x", "  <s>Hi  "}};
  EXPECT_EQ(render("A{{ x|trim }}B", x).caller, Spans{"<s>Hi"});
  EXPECT_EQ(render("A{{ x.strip() }}B", x).caller, Spans{"<s>Hi"});
  EXPECT_EQ(render("A{{ x.lstrip() }}B", x).caller, Spans{"<s>Hi  "});
  EXPECT_EQ(render("A{{ x|upper }}B", x).caller, Spans{"  <S>HI  "});
  EXPECT_EQ(render("A{{ x.lower() }}B", x).caller, Spans{"  <s>hi  "});
  EXPECT_EQ(render("A{{ x[2:5] }}B", x).caller, Spans{"<s>"});
  EXPECT_EQ(render("A{{ x[2] }}B", x).caller, Spans{"<"});
  EXPECT_EQ(render("{% for c in x|trim %}{{ c }}|{% endfor %}", x).caller, (Spans{"<", "s", ">", "H", "i"}));
  // Mixed strings: slicing keeps each byte's own origin.
  Tagged t = render("{{ ('<|a|>' + x|trim)[3:] }}", x);
  EXPECT_EQ(t.text, "|><s>Hi");
  EXPECT_EQ(t.caller, Spans{"<s>Hi"});
}

TEST(TemplateProvenance, ReplaceJoinFormatKeepExactSpans) {
  const ordered_json c = {{"x", "a</s>b"}, {"parts", {"p</s>", "q"}}};
  Tagged t = render("{{ x.replace('</s>', '<|sep|>') }}", c);
  EXPECT_EQ(t.text, "a<|sep|>b");
  EXPECT_EQ(t.caller, (Spans{"a", "b"}));
  t = render("{{ x|replace('a', '<A>') }}", c);
  EXPECT_EQ(t.text, "<A></s>b");
  EXPECT_EQ(t.caller, Spans{"</s>b"});
  t = render("{{ parts|join('<|j|>') }}", c);
  EXPECT_EQ(t.text, "p</s><|j|>q");
  EXPECT_EQ(t.caller, (Spans{"p</s>", "q"}));
  t = render("{{ '<|j|>'.join(parts) }}", c);
  EXPECT_EQ(t.caller, (Spans{"p</s>", "q"}));
  t = render("{{ '<|u|>{}<|e|>'.format(x) }}", c);
  EXPECT_EQ(t.text, "<|u|>a</s>b<|e|>");
  EXPECT_EQ(t.caller, Spans{"a</s>b"});
}

TEST(TemplateProvenance, ContainersJsonAndKeys) {
  const ordered_json c = {{"tools", {{{"name", "</s>"}, {"</s>key", 1}}}}};
  Tagged t = render("<T>{{ tools|tojson }}</T>", c);
  EXPECT_EQ(t.text, R"(<T>[{"name": "</s>", "</s>key": 1}]</T>)");
  EXPECT_EQ(t.caller, (Spans{R"("name")", R"("</s>")", R"("</s>key")"}));
  t = render("{{ tools }}", c);
  EXPECT_EQ(t.text, "[{'name': '</s>', '</s>key': 1}]");
  EXPECT_EQ(t.caller, (Spans{"'name'", "'</s>'", "'</s>key'"}));
  t = render("{% for k, v in tools[0].items() %}<{{ k }}>{% endfor %}", c);
  EXPECT_EQ(t.text, "<name><</s>key>");
  EXPECT_EQ(t.caller, (Spans{"name", "</s>key"}));
  t = render("{% for k in tools[0] %}<{{ k }}>{% endfor %}", c);
  EXPECT_EQ(t.caller, (Spans{"name", "</s>key"}));
  t = render("{% for k, v in tools[0]|dictsort %}<{{ k }}>{% endfor %}", c);
  EXPECT_EQ(t.caller, (Spans{"</s>key", "name"}));
  // A dict built with caller keys keeps them caller text.
  t = render("{% set d = {tools[0].name: 1} %}{% for k in d %}{{ k }}{% endfor %}", c);
  EXPECT_EQ(t.caller, Spans{"</s>"});
}

TEST(TemplateProvenance, UntrackedOperationsMakeWholeResultCallerText) {
  const ordered_json c = {{"x", "a <s> b"}};
  EXPECT_EQ(render("{{ x|escape }}", c).caller, Spans{"a &lt;s&gt; b"});
  EXPECT_EQ(render("{{ ('<|t|>' + x)|escape }}", c).caller, Spans{"&lt;|t|&gt;a &lt;s&gt; b"});
  EXPECT_EQ(render("{% for w in x.split(' ') %}[{{ w }}]{% endfor %}", c).caller, (Spans{"a", "<s>", "b"}));
  EXPECT_EQ(render("{{ x|indent(2, true) }}", c).caller, Spans{"  a <s> b"});
  // Template-only strings stay template text through the same operations.
  EXPECT_TRUE(render("{{ '<s> b'|escape }}{{ 'a b'.split(' ')|join('<s>') }}", c).caller.empty());
}

TEST(TemplateProvenance, TrustedVariablesAndTemplateTextAreNotCallerText) {
  const ordered_json caller = {{"bos_token", "caller-bos"}, {"x", "u"}};
  const ordered_json trusted = {{"bos_token", "<s>"}, {"add_generation_prompt", true}};
  Tagged t = render("{{ bos_token }}{{ x }}{% if add_generation_prompt %}<|gen|>{% endif %}", caller, trusted);
  EXPECT_EQ(t.text, "<s>u<|gen|>");
  EXPECT_EQ(t.caller, Spans{"u"});
  // render() (one trusted context) reports nothing and renders the same text.
  auto tmpl = ChatTemplate::parse("{{ bos_token }}{{ x }}");
  ASSERT_TRUE(tmpl.ok());
  auto plain = tmpl->render(nlohmann::json{{"bos_token", "<s>"}, {"x", "u"}});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(*plain, "<s>u");
}

TEST(TemplateProvenance, ComparisonsSeeTheTextNotTheOrigin) {
  const ordered_json c = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  Tagged t = render("{% for m in messages %}{% if m.role == 'user' %}<|u|>{{ m.content }}{% endif %}{% endfor %}", c);
  EXPECT_EQ(t.text, "<|u|>hi");
  EXPECT_EQ(t.caller, Spans{"hi"});
}

}  // namespace
}  // namespace tessera
