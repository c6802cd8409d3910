// A small declarative command-line parser for the oxinfer subcommands.
//
//   ArgParser p("inspect", "oxinfer inspect FILE|DIR", "Print metadata and tensors of a model.");
//   p.flag("json", "print JSON");
//   p.option("threads", "N", "worker threads", "t");
//   auto args = p.parse(argv);           // throws UsageError; --help prints usage and exits 0
//   args.get_int("threads", 0);
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace oxi::cli {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ParsedArgs {
 public:
  bool has(const std::string& name) const;
  bool flag(const std::string& name) const { return has(name); }
  std::optional<std::string> get(const std::string& name) const;
  std::string get_or(const std::string& name, const std::string& fallback) const;
  long long get_int(const std::string& name, long long fallback) const;
  double get_double(const std::string& name, double fallback) const;
  // Every value of an option given several times, in order.
  std::vector<std::string> get_all(const std::string& name) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  friend class ArgParser;
  std::multimap<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

class ArgParser {
 public:
  ArgParser(std::string command, std::string usage, std::string summary);
  ArgParser& flag(const std::string& name, const std::string& help,
                  const std::string& short_name = "");
  ArgParser& option(const std::string& name, const std::string& metavar, const std::string& help,
                    const std::string& short_name = "");
  // Adds --threads N, shared by every subcommand that computes.
  ArgParser& threads_option();
  ParsedArgs parse(const std::vector<std::string>& argv) const;
  std::string help_text() const;

 private:
  struct Spec {
    std::string name, short_name, metavar, help;
    bool takes_value = false;
  };
  const Spec* find(const std::string& token) const;
  std::string command_, usage_, summary_;
  std::vector<Spec> specs_;
};

// Thrown by parse() after printing help for --help: the command returns 0.
struct HelpShown {};

}  // namespace oxi::cli
