// oxillm through GstHarness on a tiny random llama GGUF (tests/llm's writer): answers per buffer
// with the input's span, the same text as oxi::llm::Engine run directly on the same messages,
// accumulate mode at EOS and per interval, caps, load errors on the bus, properties, flushing.
#include <gst/check/gstharness.h>
#include <gst/gst.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lib/llm/engine.h"
#include "lib/llm/json_schema_grammar.h"
#include "tests/common/test_data.h"
#include "tests/elements/element_test_util.h"
#include "tests/llm/tiny_model.h"
#include "tests/llm_engine/engine_fixture.h"

namespace {

namespace fs = std::filesystem;

class OxiLlm : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(oxi::test::load_oxinfer_plugin());
    dir_ = new oxi::test::TempDir();
    model_ = *dir_ / "tiny.gguf";
    oxi::llm::test::write_tiny_llama(model_);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  // An oxillm on the tiny model, greedy, short answers, in a harness that is PLAYING.
  static GstHarness* harness(const char* extra_properties = "") {
    const std::string description = "oxillm model=\"" + model_.string() +
                                    "\" temperature=0 max-tokens=6 threads=2 " + extra_properties;
    GError* error = nullptr;
    GstElement* e = gst_parse_launch(description.c_str(), &error);
    EXPECT_EQ(error, nullptr) << (error ? error->message : "");
    if (error) g_error_free(error);
    GstHarness* h = gst_harness_new_with_element(e, "sink", "src");
    gst_object_unref(e);
    gst_harness_set_src_caps_str(h, "text/x-raw, format=(string)utf8");
    return h;
  }

  // What the engine answers, loaded separately from the same file, to the same messages.
  static std::string engine_answer(const std::string& system, const std::string& user,
                                   int max_tokens, oxi::llm::SamplerOptions sampling = greedy(),
                                   oxi::llm::EngineOptions eo = {}, const std::string& grammar = "",
                                   bool ignore_eos = false) {
    eo.threads = 1;
    auto engine = oxi::llm::Engine::load(model_.string(), eo);
    oxi::llm::GenerateOptions g;
    g.sampling = sampling;
    g.ignore_eos = ignore_eos;
    g.max_tokens = max_tokens;
    g.grammar = grammar;
    std::vector<oxi::ChatMessage> messages;
    if (!system.empty()) messages.push_back({"system", system});
    messages.push_back({"user", user});
    return engine->send(messages, g).text;
  }
  // The error an oxillm with `properties` posts on its bus answering `text` (the answer fails
  // on the task, after the push returned), or "<no error>".
  static std::string answer_error(const std::string& properties, const std::string& text) {
    GstElement* e = gst_parse_launch(
        ("oxillm model=\"" + model_.string() + "\" threads=1 " + properties).c_str(), nullptr);
    EXPECT_NE(e, nullptr);
    if (!e) return "<no element>";
    GstBus* bus = gst_bus_new();
    gst_element_set_bus(e, bus);
    GstHarness* h = gst_harness_new_with_element(e, "sink", "src");
    gst_harness_set_src_caps_str(h, "text/x-raw, format=(string)utf8");
    gst_harness_push(h, oxi::test::text_buffer(text, 0, GST_SECOND));
    const std::optional<oxi::test::BusError> error = oxi::test::pop_bus_error(bus, 60 * GST_SECOND);
    gst_element_set_bus(e, nullptr);
    gst_harness_teardown(h);
    gst_object_unref(bus);
    gst_object_unref(e);
    return error ? error->message : "<no error>";
  }
  static std::string engine_answer_stopping(const std::string& user, int max_tokens,
                                            const std::vector<std::string>& stop) {
    oxi::llm::EngineOptions eo;
    eo.threads = 1;
    auto engine = oxi::llm::Engine::load(model_.string(), eo);
    oxi::llm::GenerateOptions g;
    g.sampling = greedy();
    g.max_tokens = max_tokens;
    g.stop = stop;
    return engine->send({{"user", user}}, g).text;
  }
  static oxi::llm::SamplerOptions greedy() {
    oxi::llm::SamplerOptions s;
    s.temperature = 0;
    return s;
  }

  static oxi::test::TempDir* dir_;
  static fs::path model_;
};

oxi::test::TempDir* OxiLlm::dir_ = nullptr;
fs::path OxiLlm::model_;

using oxi::test::text_buffer;
using oxi::test::wait_for_eos;

struct Answer {
  std::string text;
  GstClockTime pts = GST_CLOCK_TIME_NONE, duration = GST_CLOCK_TIME_NONE;
};

// The next output buffer (gst_harness_pull waits up to 60 s for it).
Answer pull_answer(GstHarness* h) {
  Answer a;
  GstBuffer* out = gst_harness_pull(h);
  if (!out) {
    a.text = "<no buffer>";
    return a;
  }
  a.text = oxi::test::buffer_text(out);
  a.pts = GST_BUFFER_PTS(out);
  a.duration = GST_BUFFER_DURATION(out);
  gst_buffer_unref(out);
  return a;
}

// The text of the first error message on `bus`, or "" when there is none.
std::string bus_error(GstBus* bus) {
  const std::optional<oxi::test::BusError> e = oxi::test::pop_bus_error(bus);
  return e ? e->message : "";
}

TEST_F(OxiLlm, AnswersEachBufferWithItsSpan) {
  GstHarness* h = harness();
  ASSERT_EQ(gst_harness_push(h, text_buffer("w260 w261", GST_SECOND, 2 * GST_SECOND)), GST_FLOW_OK);
  ASSERT_EQ(gst_harness_push(h, text_buffer("w270", 5 * GST_SECOND, GST_SECOND / 2)), GST_FLOW_OK);
  const Answer a = pull_answer(h);
  const Answer b = pull_answer(h);
  EXPECT_EQ(a.pts, GST_SECOND);
  EXPECT_EQ(a.duration, 2 * GST_SECOND);
  EXPECT_EQ(b.pts, 5 * GST_SECOND);
  EXPECT_EQ(b.duration, GST_SECOND / 2);
  EXPECT_FALSE(a.text.empty());
  EXPECT_EQ(a.text, engine_answer("", "w260 w261", 6));
  EXPECT_EQ(b.text, engine_answer("", "w270", 6));

  GstCaps* caps = gst_pad_get_current_caps(h->sinkpad);
  ASSERT_NE(caps, nullptr);
  GstStructure* s = gst_caps_get_structure(caps, 0);
  EXPECT_STREQ(gst_structure_get_name(s), "text/x-raw");
  EXPECT_STREQ(gst_structure_get_string(s, "format"), "utf8");
  gst_caps_unref(caps);
  gst_harness_teardown(h);
}

TEST_F(OxiLlm, GreedyAnswerEqualsTheEngineOnTheSameMessages) {
  GstHarness* h = harness("system-prompt=\"w280 w281\" prompt-template=\"w290 {text} w291\"");
  ASSERT_EQ(gst_harness_push(h, text_buffer("w262 w263", 0, GST_SECOND)), GST_FLOW_OK);
  const Answer a = pull_answer(h);
  EXPECT_EQ(a.text, engine_answer("w280 w281", "w290 w262 w263 w291", 6));
  // Each answer stands alone: the same input twice gets the same answer.
  ASSERT_EQ(gst_harness_push(h, text_buffer("w262 w263", GST_SECOND, GST_SECOND)), GST_FLOW_OK);
  EXPECT_EQ(pull_answer(h).text, a.text);
  // Another input after the same system prompt and template start (which the element's cache
  // keeps): the engine's fresh answer still.
  ASSERT_EQ(gst_harness_push(h, text_buffer("w264", 2 * GST_SECOND, GST_SECOND)), GST_FLOW_OK);
  EXPECT_EQ(pull_answer(h).text, engine_answer("w280 w281", "w290 w264 w291", 6));
  gst_harness_teardown(h);
}

TEST_F(OxiLlm, SeededSamplingEqualsTheEngine) {
  GstHarness* h = harness("temperature=0.9 top-k=0 top-p=1 min-p=0 seed=11 max-tokens=10");
  ASSERT_EQ(gst_harness_push(h, text_buffer("w264", 0, GST_SECOND)), GST_FLOW_OK);
  oxi::llm::SamplerOptions sampling;
  sampling.temperature = 0.9f;
  sampling.top_k = 0;
  sampling.top_p = 1;
  sampling.min_p = 0;
  sampling.seed = 11;
  const std::string expected = engine_answer("", "w264", 10, sampling);
  EXPECT_EQ(pull_answer(h).text, expected);
  // The seed matters: another one gives another answer (random weights, 10 tokens).
  sampling.seed = 12;
  EXPECT_NE(engine_answer("", "w264", 10, sampling), expected);
  gst_harness_teardown(h);
}

// The penalties, typical, top-n-sigma, XTC and Mirostat reach the sampler as in the engine.
TEST_F(OxiLlm, SamplersEqualTheEngine) {
  GstHarness* h = harness(
      "temperature=0.9 seed=11 max-tokens=10 frequency-penalty=0.5 presence-penalty=0.25 "
      "typical-p=0.8");
  ASSERT_EQ(gst_harness_push(h, text_buffer("w264", 0, GST_SECOND)), GST_FLOW_OK);
  oxi::llm::SamplerOptions sampling;
  sampling.temperature = 0.9f;
  sampling.seed = 11;
  sampling.frequency_penalty = 0.5f;
  sampling.presence_penalty = 0.25f;
  sampling.typical_p = 0.8f;
  const std::string expected = engine_answer("", "w264", 10, sampling);
  EXPECT_EQ(pull_answer(h).text, expected);
  sampling.frequency_penalty = sampling.presence_penalty = 0;
  sampling.typical_p = 1;
  EXPECT_NE(engine_answer("", "w264", 10, sampling), expected);

  // top-n-sigma and XTC, then Mirostat.
  g_object_set(h->element, "frequency-penalty", 0.0f, "presence-penalty", 0.0f, "typical-p", 1.0f,
               "top-n-sigma", 1.5f, "xtc-probability", 0.7f, "xtc-threshold", 0.05f, nullptr);
  sampling.top_n_sigma = 1.5f;
  sampling.xtc_probability = 0.7f;
  sampling.xtc_threshold = 0.05f;
  ASSERT_EQ(gst_harness_push(h, text_buffer("w264", GST_SECOND, GST_SECOND)), GST_FLOW_OK);
  const std::string filtered = engine_answer("", "w264", 10, sampling);
  EXPECT_EQ(pull_answer(h).text, filtered);
  g_object_set(h->element, "mirostat", 2, "mirostat-tau", 3.0f, "mirostat-eta", 0.3f, nullptr);
  sampling.mirostat = 2;
  sampling.mirostat_tau = 3.0f;
  sampling.mirostat_eta = 0.3f;
  ASSERT_EQ(gst_harness_push(h, text_buffer("w264", 2 * GST_SECOND, GST_SECOND)), GST_FLOW_OK);
  const std::string mirostat = engine_answer("", "w264", 10, sampling);
  EXPECT_EQ(pull_answer(h).text, mirostat);
  EXPECT_NE(mirostat, filtered);

  // repeat-last-n: how far back the repetition penalty looks.
  g_object_set(h->element, "mirostat", 0, "top-n-sigma", -1.0f, "xtc-probability", 0.0f,
               "repeat-penalty", 3.0f, "repeat-last-n", 2, "max-tokens", 24, nullptr);
  oxi::llm::SamplerOptions penalized;
  penalized.temperature = 0.9f;
  penalized.seed = 11;
  penalized.repeat_penalty = 3.0f;
  penalized.repeat_last_n = 2;
  ASSERT_EQ(gst_harness_push(h, text_buffer("w264", 3 * GST_SECOND, GST_SECOND)), GST_FLOW_OK);
  const std::string near = engine_answer("", "w264", 24, penalized);
  EXPECT_EQ(pull_answer(h).text, near);
  penalized.repeat_last_n = -1;
  EXPECT_NE(engine_answer("", "w264", 24, penalized), near);
  gst_harness_teardown(h);
}

// stop: the answer ends where a stop string appears, as the engine's does; set from a launch
// line's array syntax and read back.
TEST_F(OxiLlm, StopStringsEndTheAnswer) {
  const std::string free = engine_answer("", "w264", 20);
  ASSERT_GT(free.size(), 10u);
  const std::string cut = free.substr(free.size() / 2, 3);
  GstHarness* h = harness("max-tokens=20");
  // A launch line's array syntax, read back.
  gst_util_set_object_arg(G_OBJECT(h->element), "stop", "<\"ab\", \"c d\">");
  GValue read = G_VALUE_INIT;
  g_value_init(&read, GST_TYPE_ARRAY);
  g_object_get_property(G_OBJECT(h->element), "stop", &read);
  ASSERT_EQ(gst_value_array_get_size(&read), 2u);
  EXPECT_STREQ(g_value_get_string(gst_value_array_get_value(&read, 1)), "c d");
  g_value_unset(&read);
  // The answer's own text (the random model's bytes) as a stop string.
  GValue stop = G_VALUE_INIT;
  g_value_init(&stop, GST_TYPE_ARRAY);
  for (const std::string& text : {cut, std::string("never-seen")}) {
    GValue item = G_VALUE_INIT;
    g_value_init(&item, G_TYPE_STRING);
    g_value_set_string(&item, text.c_str());
    gst_value_array_append_and_take_value(&stop, &item);
  }
  g_object_set_property(G_OBJECT(h->element), "stop", &stop);
  g_value_unset(&stop);
  ASSERT_EQ(gst_harness_push(h, text_buffer("w264", 0, GST_SECOND)), GST_FLOW_OK);
  const std::string expected = engine_answer_stopping("w264", 20, {cut, "never-seen"});
  EXPECT_EQ(expected, free.substr(0, free.find(cut)));
  EXPECT_EQ(pull_answer(h).text, expected);
  gst_harness_teardown(h);
}

// logit-bias and ignore-eos reach the engine: an end token biased to be the greedy pick makes
// the answer empty (a GAP), and with ignore-eos the answer runs to max-tokens as the engine's
// does; a malformed list is refused when set, a token off the vocabulary fails the answer.
TEST_F(OxiLlm, LogitBiasAndIgnoreEosEqualTheEngine) {
  const std::vector<int32_t> ends = oxi::llm::Engine::load(model_.string())->model().eos_ids();
  ASSERT_FALSE(ends.empty());
  std::string ends_first;
  oxi::llm::SamplerOptions sampling = greedy();
  for (int32_t id : ends) {
    ends_first += std::to_string(id) + "+100,";
    sampling.logit_bias.push_back({id, 100.0f});
  }
  EXPECT_EQ(engine_answer("", "w264", 6, sampling), "");

  GstHarness* h = harness();
  g_object_set(h->element, "logit-bias", "270+3,5-inf", nullptr);
  g_object_set(h->element, "logit-bias", "270+3,x-1", nullptr);  // refused
  gchar* kept = nullptr;
  g_object_get(h->element, "logit-bias", &kept, nullptr);
  EXPECT_STREQ(kept, "270+3,5-inf");
  g_free(kept);
  ASSERT_EQ(gst_harness_push(h, text_buffer("w264", 0, GST_SECOND)), GST_FLOW_OK);
  oxi::llm::SamplerOptions biased = greedy();
  biased.logit_bias = {{270, 3.0f}, {5, -std::numeric_limits<float>::infinity()}};
  const std::string expected = engine_answer("", "w264", 6, biased);
  EXPECT_EQ(pull_answer(h).text, expected);
  EXPECT_NE(engine_answer("", "w264", 6), expected);

  g_object_set(h->element, "logit-bias", ends_first.c_str(), "ignore-eos", TRUE, nullptr);
  ASSERT_EQ(gst_harness_push(h, text_buffer("w264", GST_SECOND, GST_SECOND)), GST_FLOW_OK);
  const std::string running = engine_answer("", "w264", 6, sampling, {}, "", true);
  EXPECT_FALSE(running.empty());
  EXPECT_EQ(pull_answer(h).text, running);
  gst_harness_teardown(h);

  const std::string error = answer_error("logit-bias=100000+1", "w265");
  EXPECT_NE(error.find("logit bias token 100000 is not in the vocabulary"), std::string::npos)
      << error;
}

// The grammar holds each answer as it holds the engine's; one that does not parse is refused
// when set, the previous one kept.
TEST_F(OxiLlm, GrammarHoldsEachAnswer) {
  const std::string grammar = "root ::= (\"yes\" | \"no\") \" \" [0-9]{1,2}";
  GstHarness* h = harness("max-tokens=40");
  g_object_set(h->element, "grammar", grammar.c_str(), nullptr);
  g_object_set(h->element, "grammar", "root ::= (", nullptr);  // refused
  gchar* kept = nullptr;
  g_object_get(h->element, "grammar", &kept, nullptr);
  EXPECT_EQ(std::string(kept ? kept : ""), grammar);
  g_free(kept);
  ASSERT_EQ(gst_harness_push(h, text_buffer("w264", 0, GST_SECOND)), GST_FLOW_OK);
  const std::string expected = engine_answer("", "w264", 40, greedy(), {}, grammar);
  EXPECT_TRUE(std::regex_match(expected, std::regex("(yes|no) [0-9]{1,2}"))) << expected;
  EXPECT_EQ(pull_answer(h).text, expected);

  // json-schema: the grammar json_schema_to_gbnf makes of it; not with grammar as well.
  const std::string schema = R"({"type": "array", "items": {"type": "boolean"}, "maxItems": 2})";
  g_object_set(h->element, "grammar", nullptr, "json-schema", schema.c_str(), nullptr);
  g_object_set(h->element, "json-schema", R"({"type": "number", "minimum": 0})", nullptr);
  ASSERT_EQ(gst_harness_push(h, text_buffer("w264", GST_SECOND, GST_SECOND)), GST_FLOW_OK);
  EXPECT_EQ(pull_answer(h).text,
            engine_answer("", "w264", 40, greedy(), {}, oxi::llm::json_schema_to_gbnf(schema)));
  gst_harness_teardown(h);
}

TEST_F(OxiLlm, AccumulateAnswersTheWholeTextBeforeEos) {
  GstHarness* h = harness("mode=accumulate");
  ASSERT_EQ(gst_harness_push(h, text_buffer(" w260", 2 * GST_SECOND, GST_SECOND)), GST_FLOW_OK);
  ASSERT_EQ(gst_harness_push(h, text_buffer("w261", 3 * GST_SECOND, GST_SECOND)), GST_FLOW_OK);
  ASSERT_EQ(gst_harness_push(h, text_buffer(" w262", 6 * GST_SECOND, 2 * GST_SECOND)), GST_FLOW_OK);
  EXPECT_EQ(gst_harness_buffers_in_queue(h), 0u);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  ASSERT_TRUE(wait_for_eos(h));
  // The answer was pushed before EOS went downstream.
  ASSERT_EQ(gst_harness_buffers_in_queue(h), 1u);
  const Answer a = pull_answer(h);
  EXPECT_EQ(a.pts, 2 * GST_SECOND);
  EXPECT_EQ(a.duration, 6 * GST_SECOND);  // 2 s .. 8 s
  // The pieces are joined with a space where neither side has one.
  EXPECT_EQ(a.text, engine_answer("", " w260 w261 w262", 6));
  gst_harness_teardown(h);
}

TEST_F(OxiLlm, AccumulateWithIntervalAnswersEachSpan) {
  GstHarness* h = harness("mode=accumulate interval=2.0");
  ASSERT_EQ(gst_harness_push(h, text_buffer("w260", 0, GST_SECOND)), GST_FLOW_OK);
  ASSERT_EQ(gst_harness_push(h, text_buffer(" w261", GST_SECOND, GST_SECOND)), GST_FLOW_OK);
  const Answer first = pull_answer(h);  // 0 .. 2 s reached the interval
  EXPECT_EQ(first.pts, 0u);
  EXPECT_EQ(first.duration, 2 * GST_SECOND);
  EXPECT_EQ(first.text, engine_answer("", "w260 w261", 6));
  ASSERT_EQ(gst_harness_push(h, text_buffer(" w262", 2 * GST_SECOND, GST_SECOND / 2)), GST_FLOW_OK);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos()));
  const Answer rest = pull_answer(h);  // the remainder at EOS
  EXPECT_EQ(rest.pts, 2 * GST_SECOND);
  EXPECT_EQ(rest.duration, GST_SECOND / 2);
  EXPECT_EQ(rest.text, engine_answer("", " w262", 6));
  gst_harness_teardown(h);
}

TEST_F(OxiLlm, BlankInputBecomesAGap) {
  GstHarness* h = harness();
  ASSERT_EQ(gst_harness_push(h, text_buffer("  \n", 3 * GST_SECOND, GST_SECOND)), GST_FLOW_OK);
  ASSERT_EQ(gst_harness_push(h, text_buffer("w265", 4 * GST_SECOND, GST_SECOND)), GST_FLOW_OK);
  EXPECT_EQ(pull_answer(h).pts, 4 * GST_SECOND);
  bool gap = false;
  while (GstEvent* e = gst_harness_try_pull_event(h)) {
    if (GST_EVENT_TYPE(e) == GST_EVENT_GAP) {
      GstClockTime ts = 0, duration = 0;
      gst_event_parse_gap(e, &ts, &duration);
      EXPECT_EQ(ts, 3 * GST_SECOND);
      EXPECT_EQ(duration, GST_SECOND);
      gap = true;
    }
    gst_event_unref(e);
  }
  EXPECT_TRUE(gap);
  gst_harness_teardown(h);
}

TEST_F(OxiLlm, FlushDropsPendingAnswers) {
  GstHarness* h = harness("max-tokens=-1");
  // Several long answers queued, then a flush: none of them may come out after it.
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(gst_harness_push(h, text_buffer("w266 w267", i * GST_SECOND, GST_SECOND)),
              GST_FLOW_OK);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_flush_start()));
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_flush_stop(TRUE)));
  const double flush_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(flush_s, 5.0);  // a cancelled answer stops at its next token
  // Answers finished before the flush may have arrived; drop them.
  while (GstBuffer* b = gst_harness_try_pull(h)) gst_buffer_unref(b);

  GstElement* e = gst_harness_find_element(h, "oxillm");
  g_object_set(e, "max-tokens", 3, nullptr);
  gst_object_unref(e);
  GstSegment segment;
  gst_segment_init(&segment, GST_FORMAT_TIME);
  ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_segment(&segment)));
  ASSERT_EQ(gst_harness_push(h, text_buffer("w268", 10 * GST_SECOND, GST_SECOND)), GST_FLOW_OK);
  const Answer a = pull_answer(h);
  EXPECT_EQ(a.pts, 10 * GST_SECOND);
  EXPECT_EQ(a.text, engine_answer("", "w268", 3));
  EXPECT_EQ(gst_harness_buffers_in_queue(h), 0u);
  gst_harness_teardown(h);
}

TEST_F(OxiLlm, RefusesOtherCaps) {
  GstElement* e = gst_element_factory_make("oxillm", nullptr);
  ASSERT_NE(e, nullptr);
  GstPad* sink = gst_element_get_static_pad(e, "sink");
  for (const char* refused : {"audio/x-raw, format=S16LE, rate=16000, channels=1",
                              "text/x-raw, format=(string)pango-markup"}) {
    GstCaps* caps = gst_caps_from_string(refused);
    EXPECT_FALSE(gst_pad_query_accept_caps(sink, caps)) << refused;
    gst_caps_unref(caps);
  }
  GstCaps* utf8 = gst_caps_from_string("text/x-raw, format=(string)utf8");
  EXPECT_TRUE(gst_pad_query_accept_caps(sink, utf8));
  gst_caps_unref(utf8);
  gst_object_unref(sink);
  gst_object_unref(e);
}

// READY -> PAUSED with these properties must fail with an error on the bus containing `want`.
void expect_load_error(const std::vector<std::pair<const char*, std::string>>& properties,
                       const std::string& want) {
  GstElement* e = gst_element_factory_make("oxillm", nullptr);
  for (const auto& [name, value] : properties)
    gst_util_set_object_arg(G_OBJECT(e), name, value.c_str());
  GstBus* bus = gst_bus_new();
  gst_element_set_bus(e, bus);
  EXPECT_EQ(gst_element_set_state(e, GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
  const std::string error = bus_error(bus);
  EXPECT_NE(error.find(want), std::string::npos) << "error: '" << error << "'";
  gst_element_set_state(e, GST_STATE_NULL);
  gst_element_set_bus(e, nullptr);
  gst_object_unref(bus);
  gst_object_unref(e);
}

TEST_F(OxiLlm, LoadErrorsGoToTheBusNamingThePath) {
  const fs::path garbage = *dir_ / "garbage.gguf";
  std::ofstream(garbage, std::ios::binary) << "this is not a GGUF file at all";
  expect_load_error({{"model", garbage.string()}}, garbage.string());
  const fs::path missing = *dir_ / "missing" / "model.gguf";
  expect_load_error({{"model", missing.string()}}, missing.string());
  expect_load_error({}, "No LLM model set");
  expect_load_error({{"model", model_.string()}, {"quant", "q3"}}, "q3");
  expect_load_error({{"model-instance-id", "nobody-loaded-this"}}, "nobody-loaded-this");
}

// draft-model: the answers without a draft (the model as its own draft); a draft of another
// vocabulary fails the state change naming it.
TEST_F(OxiLlm, DraftModelGivesTheSameAnswers) {
  GstHarness* h = harness(
      ("max-tokens=20 draft-max=4 draft-p-min=0 draft-model=\"" + model_.string() + "\"").c_str());
  ASSERT_EQ(gst_harness_push(h, text_buffer("w264", 0, GST_SECOND)), GST_FLOW_OK);
  EXPECT_EQ(pull_answer(h).text, engine_answer("", "w264", 20));
  gst_harness_teardown(h);

  // Two elements with one draft file: the draft is loaded once, beside the model.
  const fs::path small = *dir_ / "draft.gguf";
  oxi::llm::test::write_gguf(
      oxi::llm::test::make_tiny_model(oxi::llm::test::tiny_spec("llama", false),
                                      oxi::kernels::DType::F32, oxi::kernels::DType::F32, 3),
      small);
  const std::string with_draft =
      "max-tokens=6 draft-max=3 draft-p-min=0 draft-model=\"" + small.string() + "\"";
  GstHarness* one = harness(with_draft.c_str());
  GstHarness* two = harness(with_draft.c_str());
  ASSERT_EQ(gst_harness_push(one, text_buffer("w265", 0, GST_SECOND)), GST_FLOW_OK);
  ASSERT_EQ(gst_harness_push(two, text_buffer("w265", 0, GST_SECOND)), GST_FLOW_OK);
  EXPECT_EQ(pull_answer(one).text, engine_answer("", "w265", 6));
  EXPECT_EQ(pull_answer(two).text, engine_answer("", "w265", 6));
  guint loaded = 0;
  g_object_get(one->element, "loaded-models", &loaded, nullptr);
  EXPECT_EQ(loaded, 2u);  // the model and the draft, each once
  gst_harness_teardown(two);
  gst_harness_teardown(one);

  oxi::llm::test::TinySpec wide = oxi::llm::test::tiny_spec("llama", false);
  wide.n_vocab = 320;
  const fs::path draft = *dir_ / "wide.gguf";
  oxi::llm::test::write_gguf(
      oxi::llm::test::make_tiny_model(wide, oxi::kernels::DType::F32, oxi::kernels::DType::F32, 1),
      draft);
  expect_load_error({{"model", model_.string()}, {"draft-model", draft.string()}},
                    draft.string() + ": the draft model's vocabulary has 320 tokens");
}

TEST_F(OxiLlm, ElementsShareAModelByInstanceId) {
  GstHarness* first = harness("model-instance-id=shared-tiny");
  // The second names only the id: it uses the model the first one loaded.
  GstElement* e = gst_element_factory_make("oxillm", nullptr);
  g_object_set(e, "model-instance-id", "shared-tiny", "temperature", 0.0f, "max-tokens", 6,
               "threads", 2u, nullptr);
  GstHarness* second = gst_harness_new_with_element(e, "sink", "src");
  gst_object_unref(e);
  gst_harness_set_src_caps_str(second, "text/x-raw, format=(string)utf8");
  ASSERT_EQ(gst_harness_push(first, text_buffer("w269", 0, GST_SECOND)), GST_FLOW_OK);
  ASSERT_EQ(gst_harness_push(second, text_buffer("w269", 0, GST_SECOND)), GST_FLOW_OK);
  EXPECT_EQ(pull_answer(second).text, pull_answer(first).text);
  gst_harness_teardown(second);
  gst_harness_teardown(first);
}

TEST_F(OxiLlm, PropertiesHaveDefaultsAndRanges) {
  GstElement* e = gst_element_factory_make("oxillm", nullptr);
  ASSERT_NE(e, nullptr);
  gchar* tmpl = nullptr;
  gfloat temperature = 0, top_p = 0;
  gint max_tokens = 0, mode = -1;
  gint64 seed = 0;
  g_object_get(e, "prompt-template", &tmpl, "temperature", &temperature, "top-p", &top_p,
               "max-tokens", &max_tokens, "seed", &seed, "mode", &mode, nullptr);
  EXPECT_STREQ(tmpl, "{text}");
  g_free(tmpl);
  EXPECT_FLOAT_EQ(temperature, 0.8f);
  EXPECT_FLOAT_EQ(top_p, 0.95f);
  EXPECT_EQ(max_tokens, 256);
  EXPECT_EQ(seed, -1);
  EXPECT_EQ(mode, 0);
  guint context_size = 1;
  gint cache_type = -1;
  gchar* chat_template = nullptr;
  g_object_get(e, "context-size", &context_size, "cache-type", &cache_type, "chat-template",
               &chat_template, nullptr);
  EXPECT_EQ(context_size, 0u);  // the model's training context, capped as in the library
  EXPECT_EQ(cache_type, 0);     // auto
  EXPECT_EQ(chat_template, nullptr);

  GObjectClass* klass = G_OBJECT_GET_CLASS(e);
  for (const char* name : {"model",
                           "prompt-template",
                           "system-prompt",
                           "temperature",
                           "top-k",
                           "top-p",
                           "min-p",
                           "repeat-penalty",
                           "repeat-last-n",
                           "frequency-penalty",
                           "presence-penalty",
                           "typical-p",
                           "logit-bias",
                           "ignore-eos",
                           "seed",
                           "max-tokens",
                           "stop",
                           "threads",
                           "quant",
                           "mode",
                           "interval",
                           "model-instance-id",
                           "context-size",
                           "cache-type",
                           "chat-template",
                           "draft-model",
                           "draft-max",
                           "draft-p-min"}) {
    GParamSpec* spec = g_object_class_find_property(klass, name);
    ASSERT_NE(spec, nullptr) << name;
    EXPECT_GT(std::strlen(g_param_spec_get_blurb(spec)), 10u) << name;
  }
  // Out-of-range values are refused by GObject (with a warning) and leave the property alone.
  GValue v = G_VALUE_INIT;
  g_value_init(&v, G_TYPE_FLOAT);
  g_value_set_float(&v, -1.0f);
  GParamSpec* temp_spec = g_object_class_find_property(klass, "temperature");
  EXPECT_TRUE(g_param_value_validate(temp_spec, &v));  // had to be clamped: invalid
  g_value_unset(&v);
  GParamSpec* top_p_spec = g_object_class_find_property(klass, "top-p");
  EXPECT_FLOAT_EQ(G_PARAM_SPEC_FLOAT(top_p_spec)->maximum, 1.0f);
  GParamSpec* max_spec = g_object_class_find_property(klass, "max-tokens");
  EXPECT_EQ(G_PARAM_SPEC_INT(max_spec)->minimum, -1);

  // A template without {text} would ignore every input: refused, the old one kept.
  g_object_set(e, "prompt-template", "Summarize: {text}", nullptr);
  g_object_set(e, "prompt-template", "Summarize it", nullptr);
  g_object_get(e, "prompt-template", &tmpl, nullptr);
  EXPECT_STREQ(tmpl, "Summarize: {text}");
  g_free(tmpl);

  gst_util_set_object_arg(G_OBJECT(e), "mode", "accumulate");
  g_object_get(e, "mode", &mode, nullptr);
  EXPECT_EQ(mode, 1);
  gst_util_set_object_arg(G_OBJECT(e), "cache-type", "f32");
  g_object_get(e, "cache-type", &cache_type, nullptr);
  EXPECT_EQ(cache_type, 2);
  gst_object_unref(e);
}

// context-size reaches the engine: the reply stops where a context of that size is full, as the
// engine's with the same n_ctx does, and a prompt longer than it is an error on the bus.
TEST_F(OxiLlm, ContextSizeBoundsTheAnswer) {
  oxi::llm::EngineOptions small;
  small.n_ctx = 40;
  const std::string bounded = engine_answer("", "w265", -1, greedy(), small);
  // The tiny model's context is longer, and its greedy reply runs past 40 positions without an
  // end token: otherwise the bound would not show.
  ASSERT_NE(engine_answer("", "w265", -1), bounded);

  GstHarness* h = harness("max-tokens=-1 context-size=40");
  ASSERT_EQ(gst_harness_push(h, text_buffer("w265", 0, GST_SECOND)), GST_FLOW_OK);
  EXPECT_EQ(pull_answer(h).text, bounded);
  gst_harness_teardown(h);

  const std::string error = answer_error("context-size=3", "w265 w266 w267");
  EXPECT_NE(error.find("the context only 3 positions"), std::string::npos) << error;
}

// cache-type and chat-template reach the engine: the answers equal the engine's with the same
// options (the template changes the prompt, so the answer: checked), and an unknown template
// name is a load error naming it.
TEST_F(OxiLlm, CacheTypeAndChatTemplateReachTheEngine) {
  oxi::llm::EngineOptions chatml;
  chatml.chat_template = "chatml";
  chatml.kv_type = oxi::kernels::DType::F16;
  const std::string expected = engine_answer("", "w266 w267", 12, greedy(), chatml);
  ASSERT_NE(engine_answer("", "w266 w267", 12), expected);

  GstHarness* h = harness("max-tokens=12 cache-type=f16 chat-template=chatml");
  ASSERT_EQ(gst_harness_push(h, text_buffer("w266 w267", 0, GST_SECOND)), GST_FLOW_OK);
  EXPECT_EQ(pull_answer(h).text, expected);
  gst_harness_teardown(h);

  expect_load_error({{"model", model_.string()}, {"chat-template", "no-such-template"}},
                    "no-such-template");
}

TEST_F(OxiLlm, SurvivesStateCycles) {
  GstElement* e = gst_element_factory_make("oxillm", nullptr);
  g_object_set(e, "model", model_.c_str(), "threads", 1u, nullptr);
  for (int i = 0; i < 20; ++i) {
    ASSERT_NE(gst_element_set_state(e, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
    ASSERT_NE(gst_element_set_state(e, GST_STATE_NULL), GST_STATE_CHANGE_FAILURE);
  }
  gst_object_unref(e);
}

}  // namespace
