// Whole texts for the CLI: a file's bytes as they are, or standard input to its end (a prompt
// file, `-` for stdin, a pipeline file).
#pragma once

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

#include "lib/core/error.h"

namespace oxi::cli {

// The file's bytes (no newline translation); an Error naming the file where it cannot be read.
inline std::string read_text_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(file.string(), "cannot read");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error(file.string(), "cannot read");
  return text;
}

inline std::string read_stdin() {
  return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
}

// A FILE argument: standard input for "-", else the file's bytes.
inline std::string read_text_input(const std::string& file) {
  return file == "-" ? read_stdin() : read_text_file(file);
}

// f(), an oxi::Error from it naming `file` first ("FILE: what went wrong").
template <class F>
auto naming_file(const std::string& file, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    throw Error(file, e.what());
  }
}

}  // namespace oxi::cli
