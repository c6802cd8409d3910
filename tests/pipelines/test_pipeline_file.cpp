// The pipeline files' grammar and substitution (tools/oxinfer/pipeline_file.h): every file in
// pipelines/ parses and declares what its pipeline promises, substitution quotes values inside
// quoted strings only, and every grammar or parameter mistake is an error naming it.
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "lib/core/error.h"
#include "tests/common/test_data.h"
#include "tools/oxinfer/pipeline_file.h"

namespace oxi::cli {
namespace {

namespace fs = std::filesystem;

// The message of the oxi::Error `f` throws, or "<no error>".
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

std::vector<fs::path> repo_pipeline_files() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(OXI_PIPELINES_DIR))
    if (entry.path().extension() == ".pipeline") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(PipelineFiles, EveryFileParsesWithAHeader) {
  const std::vector<fs::path> files = repo_pipeline_files();
  std::set<std::string> names;
  for (const fs::path& f : files) {
    SCOPED_TRACE(f.string());
    const PipelineFile p = load_pipeline_file(f);
    names.insert(p.name);
    EXPECT_FALSE(p.description.empty());
    EXPECT_LE(p.description.size(), 100u);  // one line in --list
    EXPECT_EQ(p.description.back(), '.');
    EXPECT_FALSE(p.params.empty());
    for (const PipelineParam& param : p.params) EXPECT_GE(param.help.size(), 10u) << param.name;
    // With the required parameters given, nothing is left to substitute.
    std::map<std::string, std::string> values;
    for (const PipelineParam& param : p.params)
      if (param.required()) values[param.name] = "VALUE-" + param.name;
    const std::string launch = expand_pipeline(p, values);
    for (const PipelineParam& param : p.params)
      EXPECT_FALSE(contains(launch, "{" + param.name + "}")) << param.name;
    EXPECT_FALSE(contains(launch, "\\\n"));
  }
  const std::set<std::string> expected = {"burn-captions", "live-captions", "transcribe-file",
                                          "transcribe-summarize"};
  for (const std::string& name : expected) EXPECT_TRUE(names.count(name)) << name;
}

TEST(PipelineFiles, TranscribeFileHasItsParameters) {
  const PipelineFile p =
      load_pipeline_file(fs::path(OXI_PIPELINES_DIR) / "transcribe-file.pipeline");
  for (const char* name : {"input", "output", "model"}) {
    ASSERT_NE(p.find(name), nullptr) << name;
    EXPECT_TRUE(p.find(name)->required()) << name;
  }
  ASSERT_NE(p.find("language"), nullptr);
  EXPECT_EQ(p.find("language")->default_value, "auto");
  ASSERT_NE(p.find("format"), nullptr);
  EXPECT_EQ(p.find("format")->default_value, "srt");
  const std::string launch = expand_pipeline(
      p, {{"input", "/a b/in put.wav"}, {"output", "o.vtt"}, {"model", "m"}, {"format", "vtt"}});
  EXPECT_TRUE(contains(launch, "filesrc location=\"/a b/in put.wav\"")) << launch;
  EXPECT_TRUE(contains(launch, "oxisubenc format=vtt")) << launch;
  EXPECT_TRUE(contains(launch, "language-code=\"auto\"")) << launch;
  EXPECT_TRUE(contains(launch, "audio/x-raw,format=F32LE,rate=16000,channels=1")) << launch;
}

TEST(PipelineFiles, LiveCaptionsSourceIsReplaceable) {
  const PipelineFile p = load_pipeline_file(fs::path(OXI_PIPELINES_DIR) / "live-captions.pipeline");
  ASSERT_NE(p.find("source"), nullptr);
  EXPECT_EQ(p.find("source")->default_value, "autoaudiosrc");
  const std::string launch =
      expand_pipeline(p, {{"model", "m"}, {"source", "audiotestsrc num-buffers=5"}});
  EXPECT_EQ(launch.rfind("audiotestsrc num-buffers=5 ! ", 0), 0u) << launch;
}

TEST(PipelineFiles, TranscribeSummarizeKeepsTheTextSlotOfItsPrompt) {
  const PipelineFile p =
      load_pipeline_file(fs::path(OXI_PIPELINES_DIR) / "transcribe-summarize.pipeline");
  const std::string launch =
      expand_pipeline(p, {{"input", "i"}, {"output", "o"}, {"model", "w"}, {"llm", "l"}});
  // The default prompt's {text} is oxillm's, not a parameter of the file.
  EXPECT_TRUE(contains(launch,
                       "prompt-template=\"Summarize this transcript in a few sentences: "
                       "{text}\""))
      << launch;
  EXPECT_TRUE(contains(launch, "mode=accumulate")) << launch;
}

const char* kGood =
    "# A test pipeline.\n"
    "#\n"
    "# Free text is allowed in the header.\n"
    "# @param input          the file\n"
    "# @param rate=16000     sample rate\n"
    "# @param src=\"audiotestsrc wave=sine\"  the source, with spaces\n"
    "# @param empty=\"\"       may be empty\n"
    "\n"
    "{src} ! filesink location=\"{input}\" \\\n"
    "  name=\"x{empty}\" ! caps,rate={rate},f={{a}},list={ a, b }\n";

TEST(PipelineGrammar, ParsesHeaderAndBody) {
  const PipelineFile p = parse_pipeline(kGood, "good");
  EXPECT_EQ(p.description, "A test pipeline.");
  ASSERT_EQ(p.params.size(), 4u);
  EXPECT_EQ(p.params[0].name, "input");
  EXPECT_TRUE(p.params[0].required());
  EXPECT_EQ(p.params[0].help, "the file");
  EXPECT_EQ(p.params[1].default_value, "16000");
  EXPECT_EQ(p.params[2].default_value, "audiotestsrc wave=sine");
  EXPECT_EQ(p.params[2].help, "the source, with spaces");
  EXPECT_EQ(p.params[3].default_value, "");
  EXPECT_EQ(p.param_names(), "input, rate, src, empty");
  EXPECT_EQ(p.launch,
            "{src} ! filesink location=\"{input}\" name=\"x{empty}\" ! "
            "caps,rate={rate},f={{a}},list={ a, b }");
}

TEST(PipelineGrammar, SubstitutesAndEscapesOnlyInsideQuotes) {
  const PipelineFile p = parse_pipeline(kGood, "good");
  EXPECT_EQ(expand_pipeline(p, {{"input", "a \"b\" \\c"}, {"src", "x name=\"q\""}}),
            "x name=\"q\" ! filesink location=\"a \\\"b\\\" \\\\c\" name=\"x\" ! "
            "caps,rate=16000,f={a},list={ a, b }");
  EXPECT_EQ(expand_pipeline(p, {{"input", "i"}, {"rate", "8000"}, {"empty", "y"}}),
            "audiotestsrc wave=sine ! filesink location=\"i\" name=\"xy\" ! "
            "caps,rate=8000,f={a},list={ a, b }");
  // A value is inserted once: braces in it are not placeholders.
  EXPECT_TRUE(contains(expand_pipeline(p, {{"input", "{rate}"}}), "location=\"{rate}\""));
}

TEST(PipelineGrammar, ParameterErrorsNameTheParameters) {
  const PipelineFile p = parse_pipeline(kGood, "good");
  const std::string unknown = error_of([&] { expand_pipeline(p, {{"input", "i"}, {"rte", "1"}}); });
  EXPECT_TRUE(contains(unknown, "unknown parameter 'rte'")) << unknown;
  EXPECT_TRUE(contains(unknown, "input, rate, src, empty")) << unknown;
  const std::string missing = error_of([&] { expand_pipeline(p, {{"rate", "1"}}); });
  EXPECT_TRUE(contains(missing, "missing required parameter input=...")) << missing;
  EXPECT_TRUE(contains(error_of([&] { expand_pipeline(p, {{"input", ""}}); }), "input"));

  EXPECT_EQ(parse_assignments({"a=1", "b=x=y", "c="}),
            (std::map<std::string, std::string>{{"a", "1"}, {"b", "x=y"}, {"c", ""}}));
  EXPECT_TRUE(contains(error_of([] { parse_assignments({"novalue"}); }), "key=value"));
  EXPECT_TRUE(contains(error_of([] { parse_assignments({"=1"}); }), "key=value"));
  EXPECT_TRUE(contains(error_of([] { parse_assignments({"a=1", "a=2"}); }), "twice"));
}

TEST(PipelineGrammar, GrammarErrorsSayWhatAndWhere) {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"", "empty pipeline file"},
      {"fakesrc ! fakesink\n", "bad:1: a pipeline file starts with"},
      {"# @param x  help\nfakesrc\n", "bad:1: the first line must be"},
      {"#\nfakesrc\n", "bad:1: the first line must be"},
      {"# D.\n# @param x\nfakesrc name={x}\n", "bad:2: parameter 'x' has no help text"},
      {"# D.\n# @param X  help\nfakesrc\n", "bad:2: @param needs a name"},
      {"# D.\n# @param x  a\n# @param x  b\nfakesrc name={x}\n", "bad:3: parameter 'x' declared"},
      {"# D.\n# @param x=\"open  help\nfakesrc name={x}\n", "bad:2: the default of 'x' has no"},
      {"# D.\n# @param x=\"a\"b  help\nfakesrc name={x}\n", "bad:2: unexpected 'b'"},
      {"# D.\n# @option x  help\nfakesrc\n", "bad:2: unknown header keyword '@option'"},
      {"# D.\nfakesrc !\n# late\nfakesink\n", "bad:3: comments belong in the header"},
      {"# D.\n# only a header\n", "no launch description"},
      {"# D.\nfakesrc name={y}\n", "{y} is not a declared parameter"},
      {"# D.\n# @param x  help\nfakesrc\n", "parameter 'x' is never used"},
      {"# D.\nfakesrc name=\"open\n", "not closed"},
  };
  for (const Case& c : cases) {
    const std::string error = error_of([&] { parse_pipeline(c.text, "bad"); });
    EXPECT_TRUE(contains(error, c.error)) << "text: " << c.text << "\nerror: " << error;
  }
}

TEST(PipelineSearch, EnvironmentDirectoryComesFirst) {
  const oxi::test::TempDir dir;
  std::ofstream(dir / "transcribe-file.pipeline") << "# Mine.\nfakesrc ! fakesink\n";
  std::ofstream(dir / "extra.pipeline") << "# Extra.\nfakesrc ! fakesink\n";
  std::ofstream(dir / "broken.txt") << "not a pipeline";
  const std::string saved =
      std::getenv("OXINFER_PIPELINES_DIR") ? std::getenv("OXINFER_PIPELINES_DIR") : "";
  setenv("OXINFER_PIPELINES_DIR", (dir.path().string() + ":/nonexistent/dir").c_str(), 1);
  const std::vector<fs::path> dirs = pipeline_search_dirs();
  ASSERT_FALSE(dirs.empty());
  EXPECT_EQ(dirs[0], dir.path());
  for (const fs::path& d : dirs) EXPECT_NE(d, fs::path("/nonexistent/dir"));
  EXPECT_EQ(find_pipeline("transcribe-file", dirs), dir / "transcribe-file.pipeline");
  // A later directory (the source tree's) still provides the rest.
  const std::vector<fs::path> with_repo = {dir.path(), OXI_PIPELINES_DIR};
  EXPECT_EQ(find_pipeline("live-captions", with_repo),
            fs::path(OXI_PIPELINES_DIR) / "live-captions.pipeline");
  const std::vector<PipelineFile> all = list_pipelines(with_repo);
  std::map<std::string, std::string> descriptions;
  for (const PipelineFile& p : all) descriptions[p.name] = p.description;
  EXPECT_EQ(descriptions["transcribe-file"], "Mine.");  // the earlier directory wins
  EXPECT_EQ(descriptions["extra"], "Extra.");
  EXPECT_TRUE(descriptions.count("burn-captions"));
  const std::string error = error_of([&] { find_pipeline("nope", with_repo); });
  EXPECT_TRUE(contains(error, "no such pipeline")) << error;
  EXPECT_TRUE(contains(error, "extra, live-burn-captions, live-captions")) << error;
  // A path names a file directly.
  EXPECT_EQ(find_pipeline((dir / "extra.pipeline").string(), {}), dir / "extra.pipeline");
  if (saved.empty())
    unsetenv("OXINFER_PIPELINES_DIR");
  else
    setenv("OXINFER_PIPELINES_DIR", saved.c_str(), 1);
}

}  // namespace
}  // namespace oxi::cli
