// UTF-8 validation for names and strings read from model files (shortest form, no surrogates,
// at most U+10FFFF), so invalid text is reported where it enters instead of deep in a tokenizer.
#pragma once

#include <string_view>

namespace oxi::formats {

bool is_valid_utf8(std::string_view s) noexcept;

}  // namespace oxi::formats
