// The Jinja interpreter against jinja2: every case in jinja_cases.json was rendered by jinja2
// with transformers' chat-template environment (tests/reference/gen_jinja_cases.py).
#include <string>

#include <gtest/gtest.h>

#include "lib/chat/chat_template.h"
#include "lib/chat/jinja.h"
#include "lib/core/error.h"
#include "tests/chat/jinja_cases.h"

namespace {

using oxi::jinja::Json;

TEST(Jinja, MatchesJinja2OnEveryCase) {
  const Json cases = oxi::test::load_jinja_cases();
  ASSERT_GE(cases.size(), 10u);
  for (const Json& c : cases) {
    SCOPED_TRACE(c["name"].get<std::string>());
    if (c.contains("error")) {
      try {
        oxi::jinja::Template(c["template"].get<std::string>()).render(c["context"]);
        ADD_FAILURE() << "expected an error: " << c["error"];
      } catch (const oxi::Error& e) {
        EXPECT_NE(std::string(e.what()).find(c["error"].get<std::string>()), std::string::npos)
            << e.what();
      }
      continue;
    }
    try {
      const std::string got =
          oxi::jinja::Template(c["template"].get<std::string>()).render(c["context"]);
      EXPECT_EQ(got, c["expected"].get<std::string>());
    } catch (const oxi::Error& e) {
      ADD_FAILURE() << "jinja2 renders it, the interpreter failed: " << e.what();
    }
  }
}

TEST(Jinja, SyntaxErrorsNameTheLine) {
  try {
    oxi::jinja::Template("line one\n{% if x %}never closed");
    FAIL() << "expected a syntax error";
  } catch (const oxi::Error& e) {
    EXPECT_NE(std::string(e.what()).find("endif"), std::string::npos) << e.what();
  }
  EXPECT_THROW(oxi::jinja::Template("{{ 1 + }}"), oxi::Error);
  EXPECT_THROW(oxi::jinja::Template("{% frobnicate %}"), oxi::Error);
  EXPECT_THROW(oxi::jinja::Template("{{ 'unterminated }}"), oxi::Error);
  EXPECT_THROW(oxi::jinja::Template("{{ x[] }}"), oxi::Error);
  EXPECT_THROW(oxi::jinja::Template("{{ x[1 2] }}"), oxi::Error);
}

// A namespace that holds itself renders as in jinja2 and is freed with the render (the
// sanitizer build's leak check sees it otherwise).
TEST(Jinja, NamespaceHoldingItselfIsFreed) {
  const oxi::jinja::Template t(
      "{% set ns = namespace(a=1) %}{% set ns.me = ns %}{% set ns.a = ns.me.a + 1 %}{{ ns.a }}");
  EXPECT_EQ(t.render(oxi::jinja::Json::object()), "2");
}

TEST(ChatTemplate, NamedFallbacksRenderTheirFormats) {
  const std::vector<oxi::ChatMessage> chat = {
      {"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello."}, {"user", "Bye"}};
  EXPECT_EQ(oxi::ChatTemplate::named("chatml", "", "").apply(chat, true),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(
      oxi::ChatTemplate::named("llama3", "<|begin_of_text|>", "").apply({{"user", " Hi "}}, true),
      "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
      "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(
      oxi::ChatTemplate::named("llama2", "<s>", "</s>").apply(chat, false),
      "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello. </s><s>[INST] Bye [/INST]");
  EXPECT_EQ(oxi::ChatTemplate::named("gemma", "<bos>", "").apply(chat, true),
            "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n"
            "Hello.<end_of_turn>\n<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n");
  EXPECT_EQ(oxi::ChatTemplate::named("phi3", "", "<|endoftext|>").apply({{"user", "Hi"}}, true),
            "<|user|>\nHi<|end|>\n<|assistant|>\n");
  EXPECT_EQ(oxi::ChatTemplate::named("zephyr", "", "</s>").apply({{"user", "Hi"}}, true),
            "<|user|>\nHi</s>\n<|assistant|>\n");
  EXPECT_EQ(oxi::ChatTemplate::named("mistral", "<s>", "</s>").apply(chat, false),
            "<s>[INST] Be brief.\n\nHi[/INST]Hello.</s>[INST] Bye[/INST]");
  EXPECT_THROW(oxi::ChatTemplate::named("nonesuch", "", ""), oxi::Error);
  EXPECT_THROW(oxi::ChatTemplate::named("llama2", "", "").apply({{"assistant", "x"}}, false),
               oxi::Error);
}

// The context transformers' apply_chat_template gives a template without tools or documents:
// both None (so defined), beside the conversation and the BOS / EOS strings.
TEST(ChatTemplate, ContextIsTransformers) {
  const oxi::ChatTemplate t(
      "{{ tools is defined }} {{ tools is none }} {{ documents is none }} {{ bos_token }}"
      "{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}"
      "{{ add_generation_prompt }}{{ eos_token }}",
      "<s>", "</s>");
  EXPECT_EQ(t.apply({{"user", "hi"}}, true), "True True True <s>[user:hi]True</s>");
}

}  // namespace
