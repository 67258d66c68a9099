// Unit tests of the chat-template interpreter, one per feature. Expected
// strings were produced with Python jinja2 3.1.6 configured like
// transformers (trim_blocks=True, lstrip_blocks=True, loopcontrols,
// transformers' tojson) and checked by hand.
#include <gtest/gtest.h>

#include "template/chat_template.h"

namespace tessera {
namespace {

// Renders `src` with the JSON object `ctx` (key order kept); errors come
// back as "ERROR: ..." so that EXPECT_EQ shows them.
std::string render(std::string_view src, std::string_view ctx = "{}") {
  auto t = ChatTemplate::parse(src);
  if (!t.ok()) return "ERROR: " + t.status().to_string();
  auto r = t->render(nlohmann::ordered_json::parse(ctx));
  if (!r.ok()) return "ERROR: " + r.status().to_string();
  return *r;
}

Status parse_error(std::string_view src) {
  auto t = ChatTemplate::parse(src);
  return t.ok() ? Status() : t.status();
}

Status render_error(std::string_view src, std::string_view ctx = "{}") {
  auto t = ChatTemplate::parse(src);
  if (!t.ok()) return internal_error("unexpected parse error: " + t.status().to_string());
  auto r = t->render(nlohmann::json::parse(ctx));
  return r.ok() ? Status() : r.status();
}

TEST(TemplateBasic, Output) {
  EXPECT_EQ(render(R"__(Hello {{ name }}!)__",
                   R"__({"name": "world"})__"),
            R"__(Hello world!)__");
}

TEST(TemplateBasic, UndefinedRendersEmpty) {
  EXPECT_EQ(render(R"__([{{ missing }}][{{ missing is defined }}][{{ missing is not defined }}][{% if missing %}t{% else %}f{% endif %}])__",
                   R"__({})__"),
            R"__([][False][True][f])__");
}

TEST(TemplateBasic, Literals) {
  EXPECT_EQ(render(R"__({{ 'a\'b' }} {{ "q\"\n" }} {{ 42 }} {{ -1.5 }} {{ true }} {{ False }} {{ none }} {{ None }} {{ [1, 'x', [2]] }} {{ {'k': 'v', 'n': 1} }} {{ '\u00e9\x41\t.' }})__",
                   R"__({})__"),
            R"__(a'b q"
 42 -1.5 True False None None [1, 'x', [2]] {'k': 'v', 'n': 1} éA	.)__");
}

TEST(TemplateBasic, Arithmetic) {
  EXPECT_EQ(render(R"__({{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 1.5 + 1 }} {{ 'ab' + 'cd' }} {{ [1] + [2] }} {{ 'ab' * 2 }} {{ 1 ~ 'x' ~ none }} {{ 0.1 + 0.2 }})__",
                   R"__({})__"),
            R"__(7 9 3.5 3 -4 1 2 1024 2.5 abcd [1, 2] abab 1xNone 0.30000000000000004)__");
}

TEST(TemplateBasic, Comparisons) {
  EXPECT_EQ(render(R"__({{ 1 == 1.0 }} {{ 1 != 2 }} {{ 'a' < 'b' }} {{ 2 >= 3 }} {{ 1 < 2 < 3 }} {{ [1, 2] == [1, 2] }} {{ {'a': 1} == {'a': 1} }} {{ none == none }})__",
                   R"__({})__"),
            R"__(True True True False True True True True)__");
}

TEST(TemplateBasic, Logic) {
  EXPECT_EQ(render(R"__({{ true and 'x' }} {{ 0 or 'y' }} {{ not '' }} {{ 'a' in 'cat' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 3 not in [1] }} {{ not x is defined }})__",
                   R"__({})__"),
            R"__(x y True True True True True True)__");
}

TEST(TemplateBasic, Ternary) {
  EXPECT_EQ(render(R"__({{ 'yes' if x else 'no' }} {{ 'yes' if y else 'no' }} [{{ 'only' if y }}])__",
                   R"__({"x": 1, "y": 0})__"),
            R"__(yes no [])__");
}

TEST(TemplateBasic, AttributeAndItemAccess) {
  EXPECT_EQ(render(R"__({{ m.role }} {{ m['content'] }} {{ ms[0].role }} {{ ms[-1]['role'] }} {{ ms[1:]|length }} {{ ms[::-1][0].role }} {{ 'hello'[1:3] }} {{ 'héllo'[1] }} {{ [1,2,3,4,5][::2] }} [{{ m.nothing }}] [{{ ms[9] }}])__",
                   R"__({"m": {"role": "user", "content": "hi"}, "ms": [{"role": "a"}, {"role": "b"}, {"role": "c"}]})__"),
            R"__(user hi a c 2 c el é [1, 3, 5] [] [])__");
}

TEST(TemplateBasic, IfElifElse) {
  EXPECT_EQ(render(R"__({% for v in [1, 2, 3] %}{% if v == 1 %}one{% elif v == 2 %}two{% else %}many{% endif %};{% endfor %})__",
                   R"__({})__"),
            R"__(one;two;many;)__");
}

TEST(TemplateBasic, ForLoopVariables) {
  EXPECT_EQ(render(R"__({% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ x }}|{% endfor %})__",
                   R"__({"xs": ["a", "b", "c"]})__"),
            R"__(1032TrueFalse3a|2121FalseFalse3b|3210FalseTrue3c|)__");
}

TEST(TemplateBasic, ForLoopPrevNextCycle) {
  EXPECT_EQ(render(R"__({% for x in [1, 2, 3] %}{{ loop.previtem }}-{{ loop.nextitem }}-{{ loop.cycle('o', 'e') }};{% endfor %})__",
                   R"__({})__"),
            R"__(-2-o;1-3-e;2--o;)__");
}

TEST(TemplateBasic, ForElse) {
  EXPECT_EQ(render(R"__({% for x in [] %}x{% else %}empty{% endfor %}|{% for x in missing %}x{% else %}undef{% endfor %}|{% for x in [1] %}{{ x }}{% else %}no{% endfor %})__",
                   R"__({})__"),
            R"__(empty|undef|1)__");
}

TEST(TemplateBasic, ForFilterAndUnpacking) {
  EXPECT_EQ(render(R"__({% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}|{% for k, v in d|items %}{{ k }}{% endfor %}|{% for x in [1, 2, 3, 4] if x is even %}{{ x }}/{{ loop.length }}{% endfor %}|{% for c in 'ab' %}{{ c }}.{% endfor %}|{% for k in d %}{{ k }}{% endfor %})__",
                   R"__({"d": {"a": 1, "b": 2}})__"),
            R"__(a=1;b=2;|ab|2/24/2|a.b.|ab)__");
}

TEST(TemplateBasic, BreakContinue) {
  EXPECT_EQ(render(R"__({% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %})__",
                   R"__({})__"),
            R"__(0134)__");
}

TEST(TemplateBasic, SetScoping) {
  EXPECT_EQ(render(R"__({% set x = 1 %}{% for i in [1, 2] %}{% set x = x + 10 %}{{ x }},{% endfor %}{{ x }}|{% if true %}{% set y = 2 %}{% endif %}{{ y }}|{% set a, b = [3, 4] %}{{ a }}{{ b }}|{% set blk %}v={{ x }}{% endset %}{{ blk }})__",
                   R"__({})__"),
            R"__(11,11,1|2|34|v=1)__");
}

TEST(TemplateBasic, Namespace) {
  EXPECT_EQ(render(R"__({% set ns = namespace(found=false, count=0) %}{% for m in ms %}{% if m == 'b' %}{% set ns.found = true %}{% endif %}{% set ns.count = ns.count + 1 %}{% endfor %}{{ ns.found }} {{ ns.count }} {{ ns.missing is defined }})__",
                   R"__({"ms": ["a", "b"]})__"),
            R"__(True 2 False)__");
}

TEST(TemplateBasic, Macro) {
  EXPECT_EQ(render(R"__({% macro tag(name, body='-') %}<{{ name }}>{{ body }}{{ suffix }}{% endmacro %}{% set suffix = '!' %}{{ tag('a') }}{{ tag('b', 'x') }}{{ tag(name='c', body='y') }})__",
                   R"__({})__"),
            R"__(<a>-!<b>x!<c>y!)__");
}

TEST(TemplateBasic, Comments) {
  EXPECT_EQ(render(R"__(a{# ignored {{ x }} #}b{#- trims -#}  c)__",
                   R"__({})__"),
            R"__(abc)__");
}

TEST(TemplateBasic, WhitespaceControl) {
  EXPECT_EQ(render(R"__(a  {{- 'b' -}}  c
  {%- if true -%}
  d
  {%- endif %}
e)__",
                   R"__({})__"),
            R"__(abcde)__");
}

TEST(TemplateBasic, TrimAndLstripBlocks) {
  EXPECT_EQ(render(R"__(<ul>
  {% for x in [1, 2] %}
  <li>{{ x }}</li>
  {% endfor %}
</ul>
  {# note #}
end {% if true %}  x{% endif %}
)__",
                   R"__({})__"),
            R"__(<ul>
  <li>1</li>
  <li>2</li>
</ul>
end   x)__");
}

TEST(TemplateBasic, PlusDisablesStripping) {
  EXPECT_EQ(render(R"__(a
  {%+ if true +%}
b
  {%- endif %})__",
                   R"__({})__"),
            R"__(a
  
b)__");
}

TEST(TemplateBasic, TrailingNewlineDropped) {
  EXPECT_EQ(render(R"__(line
)__",
                   R"__({})__"),
            R"__(line)__");
}

TEST(TemplateBasic, FiltersText) {
  EXPECT_EQ(render(R"__({{ '  hi  '|trim }}|{{ 'aBc'|upper }}|{{ 'aBc'|lower }}|{{ 'hello wORLD'|capitalize }}|{{ 'hello wORLD-x (y)'|title }}|{{ 'a-b-c'|replace('-', '+') }}|{{ 42|string ~ '!' }}|{{ '<b>'|safe }})__",
                   R"__({})__"),
            R"__(hi|ABC|abc|Hello world|Hello World-X (Y)|a+b+c|42!|<b>)__");
}

TEST(TemplateBasic, FiltersDefault) {
  EXPECT_EQ(render(R"__({{ missing|default('d') }}|{{ ''|default('e') }}|{{ ''|default('e', true) }}|{{ missing|d('x') }}|{{ none|default('n') }})__",
                   R"__({})__"),
            R"__(d||e|x|None)__");
}

TEST(TemplateBasic, FiltersSequences) {
  EXPECT_EQ(render(R"__({{ xs|length }} {{ xs|first }} {{ xs|last }} {{ xs|join(', ') }} {{ 'abc'|list }} {{ d|items|list|length }} {{ [3, 1, 2]|sort }} {{ [1, 2, 2]|unique|list }} {{ [1, 2, 3]|sum }} {{ xs|reverse|list }} {{ d|length }} {{ 'héllo'|length }})__",
                   R"__({"xs": ["a", "b", "c"], "d": {"k": 1}})__"),
            R"__(3 a c a, b, c ['a', 'b', 'c'] 1 [1, 2, 3] [1, 2] 6 ['c', 'b', 'a'] 1 5)__");
}

TEST(TemplateBasic, FiltersNumbers) {
  EXPECT_EQ(render(R"__({{ '3'|int + 1 }} {{ 'x'|int }} {{ 3.9|int }} {{ '2.5'|float }} {{ -3|abs }} {{ 2.567|round(2) }})__",
                   R"__({})__"),
            R"__(4 0 3 2.5 3 2.57)__");
}

TEST(TemplateBasic, FiltersSelectMap) {
  EXPECT_EQ(render(R"__({{ ms|selectattr('role', 'equalto', 'user')|map(attribute='content')|join(',') }} {{ ms|rejectattr('role', 'equalto', 'user')|list|length }} {{ ms|map(attribute='role')|list }} {{ ms|selectattr('tool')|list|length }} {{ [1, 2, 3, 4]|select('odd')|list }} {{ ['a', 'b']|map('upper')|join }})__",
                   R"__({"ms": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b", "tool": true}, {"role": "user", "content": "c"}]})__"),
            R"__(a,c 1 ['user', 'assistant', 'user'] 1 [1, 3] AB)__");
}

TEST(TemplateBasic, FilterToJson) {
  EXPECT_EQ(render(R"__({{ d|tojson }}
{{ d|tojson(indent=2) }}
{{ [1, 'é', none, true, 1.5]|tojson }}
{{ {}|tojson(indent=2) }})__",
                   R"__({"d": {"name": "f", "args": {"x": [1, 2], "q": "a\"b\n"}, "empty": []}})__"),
            R"__({"name": "f", "args": {"x": [1, 2], "q": "a\"b\n"}, "empty": []}
{
  "name": "f",
  "args": {
    "x": [
      1,
      2
    ],
    "q": "a\"b\n"
  },
  "empty": []
}
[1, "é", null, true, 1.5]
{})__");
}

TEST(TemplateBasic, StringMethods) {
  EXPECT_EQ(render(R"__({{ '  hi  '.strip() }}|{{ 'xxhixx'.strip('x') }}|{{ '  hi '.lstrip() }}|{{ ' hi  '.rstrip() }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'a b c'.split(' ', 1) }}|{{ 'hello'.startswith('he') }}|{{ 'hello'.endswith(('x', 'lo')) }}|{{ 'Hi'.upper() }}{{ 'Hi'.lower() }}|{{ 'aaa'.replace('a', 'b', 2) }}|{{ 'hello world'.title() }}|{{ '-'.join(['a', 'b']) }}|{{ '{} + {}'.format(1, 2) }})__",
                   R"__({})__"),
            R"__(hi|hi|hi | hi|['a', 'b', '', 'c']|['a', 'b']|['a', 'b c']|True|True|HIhi|bba|Hello World|a-b|1 + 2)__");
}

TEST(TemplateBasic, DictMethods) {
  EXPECT_EQ(render(R"__({{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list|length }} {{ d.get('a') }} {{ d.get('zz', 'def') }} {{ d.get('zz') }})__",
                   R"__({"d": {"a": 1, "b": 2}})__"),
            R"__(['a', 'b'] [1, 2] 2 1 def None)__");
}

TEST(TemplateBasic, Tests) {
  EXPECT_EQ(render(R"__({{ x is string }} {{ x is none }} {{ n is none }} {{ d is mapping }} {{ l is iterable }} {{ x is iterable }} {{ 3 is number }} {{ l is sequence }} {{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ x is equalto 'a' }} {{ true is boolean }} {{ 1 is integer }} {{ 1.0 is float }} {{ d is not mapping }} {{ 1 is number and 'a' is string }})__",
                   R"__({"x": "a", "n": null, "d": {}, "l": [1]})__"),
            R"__(True False True True True True True True True True True True True True True False True)__");
}

TEST(TemplateBasic, Range) {
  EXPECT_EQ(render(R"__({% for i in range(3) %}{{ i }}{% endfor %}|{{ range(1, 10, 3)|list }}|{{ range(5, 0, -2)|list }}|{{ range(0)|list }})__",
                   R"__({})__"),
            R"__(012|[1, 4, 7]|[5, 3, 1]|[])__");
}

TEST(TemplateBasic, ContentParts) {
  EXPECT_EQ(render(R"__({% for m in messages %}{% if m.content is string %}{{ m.content }}{% else %}{% for p in m.content %}{{ p.text }}{% endfor %}{% endif %};{% endfor %})__",
                   R"__({"messages": [{"role": "user", "content": "plain"}, {"role": "user", "content": [{"type": "text", "text": "x"}, {"type": "text", "text": "y"}]}]})__"),
            R"__(plain;xy;)__");
}

TEST(TemplateBasic, JinjaDefaultsKeepNewlines) {
  ChatTemplateOptions options;
  options.trim_blocks = false;
  options.lstrip_blocks = false;
  auto t = ChatTemplate::parse(R"__(<ul>
  {% for x in [1, 2] %}
  <li>{{ x }}</li>
  {% endfor %}
</ul>
  {# c #}
end)__", options);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  auto r = t->render(nlohmann::json::object());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(*r, R"__(<ul>
  
  <li>1</li>
  
  <li>2</li>
  
</ul>
  
end)__");
}

TEST(TemplateBasic, GenerationBlockRendersBody) {
  EXPECT_EQ(render("a{% generation %}b{{ 1 }}{% endgeneration %}c"), "ab1c");
}

TEST(TemplateBasic, NullContextAndPlainJson) {
  auto t = ChatTemplate::parse("[{{ x }}]");
  ASSERT_TRUE(t.ok());
  auto r = t->render(nlohmann::json());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "[]");
  auto bad = t->render(nlohmann::json::array());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

TEST(TemplateBasic, RaiseExceptionMessageIsVerbatim) {
  Status st = render_error("ok{% if x %}{{ raise_exception('Bad role: ' ~ x) }}{% endif %}", R"({"x": "tool"})");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "Bad role: tool");
}

TEST(TemplateBasic, ParseErrorsNameConstructAndPosition) {
  EXPECT_EQ(parse_error("a\n{% foo %}").message(), "chat template: line 2, column 4: unknown tag 'foo'");
  EXPECT_EQ(parse_error("{% if x %}\n  {% include 'x' %}{% endif %}").message(),
            "chat template: line 2, column 6: unsupported tag 'include'");
  EXPECT_EQ(parse_error("x\n{% if a %}b").message(),
            "chat template: line 2, column 4: unclosed 'if' tag (expected 'endif')");
  EXPECT_EQ(parse_error("{% for a in b %}{% endif %}").message(),
            "chat template: line 1, column 20: unexpected 'endif' tag (no matching opening tag)");
  EXPECT_EQ(parse_error("{{ 1 + }}").message(), "chat template: line 1, column 8: expected an expression (found '}}')");
  EXPECT_EQ(parse_error("ab\n  {{ x").message(), "chat template: line 2, column 3: unclosed '{{' (missing '}}')");
  EXPECT_EQ(parse_error("{# never closed").message(), "chat template: line 1, column 1: unclosed comment '{#'");
  EXPECT_EQ(parse_error("{{ 'abc }}").message(), "chat template: line 1, column 4: unterminated string literal");
  EXPECT_EQ(parse_error("{{ a ? b }}").message(), "chat template: line 1, column 6: unexpected character '?' in tag");
  EXPECT_EQ(parse_error("{% break %}").message(),
            "chat template: line 1, column 4: 'break' outside of a for loop (found 'break')");
  EXPECT_EQ(parse_error("{% for x in xs recursive %}{% endfor %}").message(),
            "chat template: line 1, column 16: unsupported 'recursive' for loop (found 'recursive')");
  EXPECT_EQ(parse_error("{% call foo() %}{% endcall %}").message(),
            "chat template: line 1, column 4: unsupported tag 'call'");
  EXPECT_EQ(parse_error("{{ f(*args) }}").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parse_error("{{ (1 }}").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parse_error("{{ 1) }}").code(), StatusCode::kInvalidArgument);
}

TEST(TemplateBasic, RenderErrorsHavePositions) {
  EXPECT_EQ(render_error("line1\n  {{ 1 + 'a' }}").message(),
            "chat template: line 2, column 8: unsupported operand type(s) for +: 'int' and 'str'");
  EXPECT_EQ(render_error("{{ x|nope }}").message(), "chat template: line 1, column 5: unknown filter 'nope'");
  EXPECT_EQ(render_error("{{ x is nope }}").message(), "chat template: line 1, column 6: unknown test 'nope'");
  EXPECT_EQ(render_error("{{ missing_fn() }}").message(),
            "chat template: line 1, column 14: 'missing_fn' is undefined and cannot be called");
  EXPECT_EQ(render_error("{{ 'a'.nope() }}").message(),
            "chat template: line 1, column 12: 'str' object has no method 'nope'");
  EXPECT_EQ(render_error("{{ 1 // 0 }}").message(),
            "chat template: line 1, column 6: integer division or modulo by zero");
  EXPECT_EQ(render_error("{{ missing + 1 }}").message(), "chat template: line 1, column 12: 'missing' is undefined");
  EXPECT_EQ(render_error("{% set x = 1 %}{% set x.y = 2 %}").message(),
            "chat template: line 1, column 19: cannot assign attribute 'y' on non-namespace object 'x'");
  EXPECT_EQ(render_error("{% for a, b in [1] %}{% endfor %}").message(),
            "chat template: line 1, column 4: 'int' object is not iterable");
}

TEST(TemplateBasic, UndefinedAttributeChainIsUndefined) {
  // Jinja2 raises UndefinedError here; tessera is lenient (documented).
  EXPECT_EQ(render("[{{ a.b.c }}][{{ a.b is defined }}][{{ a['x'][0] }}]"), "[][False][]");
}

}  // namespace
}  // namespace tessera
