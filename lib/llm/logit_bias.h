// llama.cpp's text for logit biases, as `--logit-bias` takes it: TOKEN_ID, then + or -, then the
// bias (a number, or inf for -inf only), e.g. "15043+1" or "2-inf"; a list joins them with
// commas ("15043+1,2-inf"), as the oxillm element's logit-bias property holds them.
#pragma once

#include <string_view>
#include <vector>

#include "lib/llm/sampler.h"

namespace oxi::llm {

// Throws oxi::Error "NAME 'TEXT': ..." when the text is not of that form (NAME: the option or
// property the text came from). Whether the id is in a vocabulary is Sampler's check.
LogitBias parse_logit_bias(std::string_view text, std::string_view name = "logit bias");
// Empty items (",," or a trailing comma) are skipped; "" is no bias.
std::vector<LogitBias> parse_logit_bias_list(std::string_view text,
                                             std::string_view name = "logit bias");

}  // namespace oxi::llm
