// Fields of JSON objects that come from clients (request bodies, tool lists), read without the
// JSON library's type errors: a field of the wrong type reads as absent, so that the caller
// refuses it with its own message (oxi::Error naming the field) instead of
// "[json.exception.type_error...]".
#pragma once

#include <string>
#include <string_view>

namespace oxi::llm {

// obj[key] when obj is an object holding a string there, else `dflt`.
template <class Json>
std::string string_field(const Json& obj, const char* key, std::string_view dflt = "") {
  if (!obj.is_object()) return std::string(dflt);
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->template get<std::string>() : std::string(dflt);
}

// Whether obj is an object whose `key` is the string `value`.
template <class Json>
bool field_is(const Json& obj, const char* key, std::string_view value) {
  if (!obj.is_object()) return false;
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() && it->template get_ref<const std::string&>() == value;
}

}  // namespace oxi::llm
