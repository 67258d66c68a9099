// The progress output of long commands when stderr is not a terminal (a
// file here): plain lines at most every log interval plus the last one, in
// the "LABEL: DONE/TOTAL UNIT, ELAPSED s, DETAIL" format; the terminal bar's
// text; and ProgressTimer's elapsed-time lines and final line.
#include "progress_bar.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace tessera::cli {
namespace {

// The lines written to a temporary file by `write`.
template <typename F>
std::vector<std::string> lines_of(F write) {
  std::FILE* f = std::tmpfile();
  EXPECT_NE(f, nullptr);
  write(f);
  std::fflush(f);
  std::rewind(f);
  std::string text;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
  std::fclose(f);
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  EXPECT_TRUE(text.empty() || text.back() == '\n') << text;
  EXPECT_EQ(text.find('\r'), std::string::npos) << "no terminal control in a log";
  return lines;
}

TEST(ProgressBar, RenderedTexts) {
  EXPECT_EQ(ProgressBar::render_line("quantize", 120, 201, "tensors", 14.25, "blk.9.ffn_up.weight"),
            "quantize: 120/201 tensors, 14.2 s, blk.9.ffn_up.weight");
  EXPECT_EQ(ProgressBar::render_line("bench -p 512", 3, 3, "runs", 2.0, ""), "bench -p 512: 3/3 runs, 2.0 s");
  EXPECT_EQ(ProgressBar::render_line("x", 1, 2, "", 0.04, "d"), "x: 1/2, 0.0 s, d");
  EXPECT_EQ(ProgressBar::render("quantize", 10, 20, 1.5, "t"),
            "quantize [###############               ] 10/20 1.5 s t");
  EXPECT_EQ(ProgressBar::render("q", 0, 0, 0, ""), "q [##############################] 0/0 0.0 s");
}

TEST(ProgressBar, LogGetsEveryLineWithAZeroInterval) {
  const auto lines = lines_of([](std::FILE* f) {
    ProgressBar bar("quantize", "tensors", f, std::chrono::milliseconds(0));
    const char* details[] = {"t1", "t2", "t3"};
    for (int i = 1; i <= 3; ++i) bar.update(i, 3, details[i - 1]);
    bar.update(3, 3, "after the end");  // nothing: the bar has finished
  });
  ASSERT_EQ(lines.size(), 3u);
  const std::regex re(R"(quantize: ([123])/3 tensors, [0-9]+\.[0-9] s, t([123]))");
  for (size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(lines[i], m, re)) << lines[i];
    EXPECT_EQ(m[1], std::to_string(i + 1));
    EXPECT_EQ(m[2], std::to_string(i + 1));
  }
}

TEST(ProgressBar, LogIsThrottledToTheIntervalPlusTheLastLine) {
  const auto lines = lines_of([](std::FILE* f) {
    ProgressBar bar("perplexity", "windows", f, std::chrono::hours(1));
    for (int i = 0; i <= 200; ++i) bar.update(i, 200, "ppl so far 3.1");
  });
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(std::regex_match(lines[0], std::regex(R"(perplexity: 200/200 windows, [0-9.]+ s, ppl so far 3\.1)")))
      << lines[0];
}

TEST(ProgressTimer, ElapsedLinesThenDone) {
  const auto lines = lines_of([](std::FILE* f) {
    ProgressTimer t("loading model", "m.gguf (1.00 GiB)", f, std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    t.finish();
    t.finish();  // once
  });
  ASSERT_GE(lines.size(), 2u);
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    EXPECT_TRUE(std::regex_match(lines[i], std::regex(R"(loading model: [0-9]+\.[0-9] s, m\.gguf \(1\.00 GiB\))")))
        << lines[i];
  }
  EXPECT_TRUE(std::regex_match(lines.back(), std::regex(R"(loading model: done in 0\.[0-9] s)"))) << lines.back();
}

TEST(ProgressTimer, DestroyedWithoutFinishPrintsNoFinalLine) {
  const auto lines = lines_of([](std::FILE* f) { ProgressTimer t("convert", "a -> b", f, std::chrono::hours(1)); });
  EXPECT_TRUE(lines.empty());
}

TEST(ModelFileBytes, FilesAndDirectories) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "tessera_progress_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "a.safetensors") << std::string(100, 'x');
  std::ofstream(dir / "b.safetensors") << std::string(50, 'x');
  std::ofstream(dir / "config.json") << std::string(1000, 'x');
  EXPECT_EQ(model_file_bytes((dir / "a.safetensors").string()), 100u);
  EXPECT_EQ(model_file_bytes(dir.string()), 150u);
  EXPECT_EQ(model_file_bytes((dir / "missing.gguf").string()), 0u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tessera::cli
