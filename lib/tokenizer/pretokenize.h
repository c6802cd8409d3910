// Pre-tokenizers: how byte-level BPE models cut text into words before merging.
//
// Each model family names a list of regex passes (llama.cpp's tokenizer.ggml.pre, the Split
// patterns of a tokenizer.json). They are implemented here as hand-written matchers over code
// points with regex semantics (leftmost match, alternatives in order, greedy with
// backtracking); each pass splits every piece of the previous pass further, keeping both the
// matches and the unmatched text between them.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace oxi::tokenizer {

enum class PreTokenizer {
  none,        // the whole text is one word
  gpt2,        // GPT-2, MPT, GPT-NeoX, OLMo: 's|'t|..| ?\p{L}+| ?\p{N}+|..|\s+(?!\S)|\s+
  llama3,      // Llama 3, DBRX, Smaug, ChatGLM4: (?i:'s|..)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|..
  qwen2,       // Qwen2, StableLM2, Hunyuan, Grok-2: like llama3 with single digits
  seed_coder,  // Seed-Coder: qwen2's without the newlines after punctuation
  qwen35,      // Qwen3.5: qwen2's with marks in words ([\p{L}\p{M}]+), not in punctuation
  tekken,      // Mistral NeMo / Small 3 (Tekken): cased words [^\r\n\p{L}\p{N}]?U*L+|..|\p{N}|..
  gpt4o,       // GPT-4o's o200k, Llama 4: tekken's words with contractions after, \p{N}{1,3}
  deepseek_llm,    // DeepSeek LLM: newlines, Latin-like letters, ASCII punctuation, CJK, numbers
  deepseek_coder,  // DeepSeek Coder
  deepseek_v3,     // DeepSeek V3, Hunyuan dense: \p{N}{1,3}, kana / CJK runs, then words with marks
  afmoe,      // AFMoE: digits in threes from the right, Asian scripts' runs, deepseek_v3's words
  falcon,     // Falcon: punctuation runs, gpt2, digit triples
  starcoder,  // StarCoder, Refact, Command-R, SmolLM: single digits, then gpt2
  chameleon,  // Chameleon: sentinel / image tokens, tabs and space pairs, digits, punctuation, gpt2
  superbpe,   // SuperBPE (OLMo 2 SuperBPE): number runs, ASCII digits in threes from the right
  bloom,      // BLOOM, Poro, GPT3-Finnish:  ?[^(\s|.,!?…。，、।۔،)]+
  viking,     // Viking: bloom's pass, then single digits
  bpe_default,  // llama.cpp's default for BPE vocabularies without a pre-tokenizer name
};

// The pre-tokenizer of a GGUF `tokenizer.ggml.pre` name ("gpt-2", "llama-bpe", "qwen2", ...);
// nullopt for names this library does not know.
std::optional<PreTokenizer> pre_tokenizer_from_gguf_name(std::string_view name);
// Whether llama.cpp reads a vocabulary of that name with ignore_merges (a word that is a token
// is that token): Llama 3's and Tekken's names, not the others that share their regexes.
bool gguf_pre_tokenizer_ignores_merges(std::string_view name);
// Whether llama.cpp adds BOS by default for a BPE vocabulary of that name (Llama 3's names,
// tekken and chameleon); tokenizer.ggml.add_bos_token, where present, decides instead.
bool gguf_pre_tokenizer_adds_bos(std::string_view name);
std::string_view pre_tokenizer_name(PreTokenizer kind);

// The Split regex patterns (in tokenizer.json spelling) whose sequence this pre-tokenizer
// implements, for matching a tokenizer.json against the known ones. Steps that are not regex
// splits are spelled "<digits>" (each digit alone), "<digit-runs>" and "<punctuation>".
std::vector<std::string_view> pre_tokenizer_steps(PreTokenizer kind);

// Cuts `text` (UTF-8) into the pre-tokenizer's words: views into `text`, in order, covering it
// completely. Invalid UTF-8 bytes stay in the words as they are.
std::vector<std::string_view> pretokenize(PreTokenizer kind, std::string_view text);

}  // namespace oxi::tokenizer
