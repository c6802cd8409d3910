// jinja2's filters that work on text alone, as its 3.1 filters and markupsafe compute them:
// |title, |e (escape), |truncate, |wordwrap, |urlencode's quoting and |filesizeformat.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace oxi::jinja {

// |title (not str.title()): the text cut before and after runs of whitespace and of - ( { [ <,
// and each piece's first character uppercased, the rest lowercased.
std::string title_filter(std::string_view s);

// markupsafe's escape: & < > " ' as entities.
std::string html_escape(std::string_view s);

// |truncate(length, killwords, end, leeway): s itself when it has at most length + leeway
// characters; else its first length - len(end) characters (cut back to the last space unless
// killwords) and `end`. The caller checks length >= len(end) and leeway >= 0.
std::string truncate_text(std::string_view s, int64_t length, bool killwords, std::string_view end,
                          int64_t leeway);

// urllib's quote() of the UTF-8 bytes as |urlencode calls it: letters, digits and _.-~ stay,
// "/" too unless for a query string (for_qs), which also writes a space as "+".
std::string url_quote(std::string_view s, bool for_qs);

// |filesizeformat(binary): "1 Byte", "N Bytes" below the base, else one decimal and the
// largest prefix below the value (kB, MB, ... YB; KiB, MiB, ... YiB when binary).
std::string filesize_format(double bytes, bool binary);

// |wordwrap(width, break_long_words, wrapstring, break_on_hyphens): each line of s (as
// str.splitlines() cuts them) wrapped by Python's textwrap.wrap(line, width, expand_tabs=False,
// replace_whitespace=False, ...), every line joined with `wrapstring`. width must be > 0.
std::string wordwrap(std::string_view s, int64_t width, bool break_long_words,
                     std::string_view wrapstring, bool break_on_hyphens);

}  // namespace oxi::jinja
