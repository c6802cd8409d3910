// Edits of a JSON document for fuzz tests of loaders: every key (and every key one object
// below) replaced in turn by values of every type, zero, negative, huge, or removed.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace oxi::test {

// The values tried in place of `v`: null, 0, -1, huge, a float, a string, a bool, an empty
// array and object; for integers also v +- 1, 2v, 2^31 and 2^40; for arrays a shorter one and
// arrays of the wrong ids.
std::vector<nlohmann::json> json_edits(const nlohmann::json& v);

// Calls `run(edited_document, what)` once per edit of `doc`: each top-level key (of a document
// of over 32 keys, a vocabulary: the first three, the middle and the last) with each of
// json_edits() and removed, and each key of the (small) objects one level below.
void for_each_json_edit(const nlohmann::json& doc,
                        const std::function<void(const nlohmann::json&, const std::string&)>& run);

}  // namespace oxi::test
