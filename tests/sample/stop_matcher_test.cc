#include "sample/stop_matcher.h"

#include <gtest/gtest.h>

#include <cmath>

#include "sample/logprobs.h"

namespace tessera {
namespace {

// Feeds pieces and returns (emitted text, stopped).
std::pair<std::string, bool> feed(StopMatcher& m, const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) {
    auto o = m.push(p);
    out += o.text;
    if (o.stopped) return {out, true};
  }
  return {out + m.flush(), false};
}

TEST(StopMatcher, StopSpanningTokens) {
  StopMatcher m({"END"});
  EXPECT_EQ(feed(m, {"hello E", "N", "D and more"}), std::make_pair(std::string("hello "), true));
}

TEST(StopMatcher, HoldsBackAPossiblePrefixThenReleasesIt) {
  StopMatcher m({"END"});
  auto o = m.push("abc EN");
  EXPECT_EQ(o.text, "abc ");
  o = m.push("X");
  EXPECT_EQ(o.text, "ENX");
  EXPECT_FALSE(o.stopped);
  o = m.push("E");
  EXPECT_EQ(o.text, "");
  EXPECT_EQ(m.flush(), "E");  // generation ended for another reason
}

TEST(StopMatcher, StopInsideASingleToken) {
  StopMatcher m({"\n\n"});
  EXPECT_EQ(feed(m, {"line one\n\nline two"}), std::make_pair(std::string("line one"), true));
}

TEST(StopMatcher, StopThatIsAPrefixOfAnother) {
  StopMatcher m({"ab", "abc"});
  EXPECT_EQ(feed(m, {"xxab", "c"}), std::make_pair(std::string("xx"), true));
  StopMatcher m2({"abc", "ab"});
  EXPECT_EQ(feed(m2, {"xxa", "bc"}), std::make_pair(std::string("xx"), true));
}

TEST(StopMatcher, EarliestStopWins) {
  StopMatcher m({"world", "lo"});
  EXPECT_EQ(feed(m, {"hello world"}), std::make_pair(std::string("hel"), true));
}

TEST(StopMatcher, DetectionOffPassesThrough) {
  StopMatcher m({"END"});
  auto o = m.push("xEND", false);
  EXPECT_EQ(o.text, "xEND");
  EXPECT_FALSE(o.stopped);
}

TEST(StopMatcher, MultiByteTextIsNeverSplit) {
  StopMatcher m({"é!"});  // stop starts with a 2-byte character
  auto o = m.push("café");
  EXPECT_EQ(o.text, "caf");  // "é" held back whole
  o = m.push("?");
  EXPECT_EQ(o.text, "é?");
}

TEST(Logprobs, FromTheRawDistribution) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, -INFINITY};
  const auto lp = compute_logprobs(logits, 2, 3);
  const double z = std::log(std::exp(1.0) + std::exp(3.0) + std::exp(2.0));
  EXPECT_NEAR(lp.logprob, 2.0 - z, 1e-6);
  ASSERT_EQ(lp.top.size(), 3u);
  EXPECT_EQ(lp.top[0].first, 1);
  EXPECT_EQ(lp.top[1].first, 2);
  EXPECT_EQ(lp.top[2].first, 0);
  EXPECT_NEAR(lp.top[0].second, 3.0 - z, 1e-6);
  EXPECT_TRUE(compute_logprobs(logits, 0, 0).top.empty());
}

}  // namespace
}  // namespace tessera
