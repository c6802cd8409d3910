// Tokenizer loaders: GGUF metadata (tokenizer.ggml.*) and Hugging Face tokenizer.json.
#pragma once

#include <filesystem>

#include "lib/formats/gguf.h"
#include "lib/tokenizer/tokenizer.h"

namespace oxi::tokenizer {

// From a GGUF file's tokenizer.ggml.* metadata: model "llama" (SentencePiece), "gpt2"
// (byte-level BPE with the pre-tokenizer named by tokenizer.ggml.pre) or "bert" (WordPiece).
// Throws oxi::Error naming the file and the problem (unknown model / pre-tokenizer, ...).
TokenizerSpec spec_from_gguf(const gguf::Reader& reader);
Tokenizer from_gguf(const gguf::Reader& reader);

// From a tokenizer.json (BPE: byte-level or SentencePiece-style with byte fallback; WordPiece),
// plus the tokenizer_config.json beside it when present (add_bos_token, special token names).
// The pre_tokenizer's Split patterns must be those of one of the PreTokenizer kinds.
TokenizerSpec spec_from_hf_json(const std::filesystem::path& tokenizer_json);
Tokenizer from_hf_json(const std::filesystem::path& tokenizer_json);

// A GGUF file, a tokenizer.json, or a directory holding a tokenizer.json.
Tokenizer load(const std::filesystem::path& path);

}  // namespace oxi::tokenizer
