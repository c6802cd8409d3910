// Python's str methods on UTF-8 text, as chat templates call them through Jinja
// ('abc'.split(), |upper, |title, s[1:3], ...). Characters are code points (an invalid byte
// counts as one character); whitespace, case mappings and casing properties are Python's own
// (lib/tokenizer/unicode_tables.h, generated from Python's unicodedata), so that a template
// renders byte-identically to jinja2 on any text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oxi::jinja::py {

// The characters of s (views into s): what indexing, slicing, len() and iteration see.
std::vector<std::string_view> chars(std::string_view s);
size_t length(std::string_view s);
// The index (in characters) of the character that starts at byte `byte` of s.
int64_t char_index(std::string_view s, size_t byte);

// str.lower() (with the final sigma rule), upper(), title(), capitalize().
std::string lower(std::string_view s);
std::string upper(std::string_view s);
std::string title(std::string_view s);
std::string capitalize(std::string_view s);

// str.islower(), isupper(), isalpha(), isdigit(), isnumeric(), isdecimal(), isalnum(),
// isspace().
bool islower(std::string_view s);
bool isupper(std::string_view s);
bool isalpha(std::string_view s);
bool isdigit(std::string_view s);
bool isnumeric(std::string_view s);
bool isdecimal(std::string_view s);
bool isalnum(std::string_view s);
bool isspace(std::string_view s);

// str.strip([chars]), lstrip, rstrip: `chars` null strips whitespace.
std::string strip(std::string_view s, const std::string* chars, bool left, bool right);
// str.split([sep[, maxsplit]]) and rsplit: `sep` null splits at runs of whitespace; maxsplit
// < 0 is no limit.
std::vector<std::string> split(std::string_view s, const std::string* sep, int64_t maxsplit);
std::vector<std::string> rsplit(std::string_view s, const std::string* sep, int64_t maxsplit);
// str.splitlines(): \n, \r\n, \r, \v, \f, \x1c-\x1e, U+0085, U+2028, U+2029 end a line; a
// final line break gives no empty last line.
std::vector<std::string> splitlines(std::string_view s);
// str.replace(old, new[, count]) (count < 0: all), str.count(sub), str.find(sub) (in
// characters, -1 when absent).
std::string replace(std::string_view s, std::string_view from, std::string_view to, int64_t count);
int64_t count(std::string_view s, std::string_view sub);
int64_t find(std::string_view s, std::string_view sub);
int64_t rfind(std::string_view s, std::string_view sub);

// str.center(width, fill), ljust, rjust (`fill` one character) and zfill(width): padded to
// `width` characters; s itself when it is that long already.
enum class Justify { left, center, right };
std::string justify(std::string_view s, int64_t width, std::string_view fill, Justify how);
std::string zfill(std::string_view s, int64_t width);

// int(text) and float(text): surrounding whitespace allowed, digits of any script, int with a
// sign and "_" between digits, float also "1e3", ".5", "inf", "nan"; nullopt where Python
// raises (or an int beyond 64 bits).
std::optional<int64_t> parse_int(std::string_view text);
std::optional<double> parse_float(std::string_view text);

}  // namespace oxi::jinja::py
