// Pipeline files (pipelines/*.pipeline): a gst-launch description with named parameters, run by
// `oxinfer run NAME key=value...`. No GStreamer here: the grammar, the search path and the
// substitution only, so that tests and --print/--list need no plugin.
//
//   # Transcribe an audio or video file into subtitles.        <- first line: the description
//   #
//   # @param input                 audio or video file          <- required (no default)
//   # @param language=auto         spoken language code          <- default, one word
//   # @param source="autoaudiosrc ! queue"  capture element(s)   <- default with spaces
//   filesrc location="{input}" ! decodebin ! \                 <- the description, in lines
//     oxiwhisper language-code={language} ! fakesink
//
// The header is the leading block of `#` lines: the first is a one-line description, `@param`
// lines declare parameters (NAME: a lowercase letter, then letters, digits, '-' or '_'), other
// comment lines are free text. The rest is the launch description: its lines are joined with
// single spaces (a trailing `\` is dropped, so the body pastes into a shell after
// `gst-launch-1.0 -e`); blank lines are skipped, comments are not allowed there. `{NAME}` is
// replaced by the parameter's value (escaped for a "quoted" string when it sits inside one),
// `{{` and `}}` are literal braces, and other braces (caps lists) are left alone. Every
// placeholder must be declared and every parameter used.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oxi::cli {

struct PipelineParam {
  std::string name;
  std::optional<std::string> default_value;  // none: required
  std::string help;
  bool required() const { return !default_value.has_value(); }
};

struct PipelineFile {
  std::string name;            // the file's stem
  std::filesystem::path path;  // where it was read from (empty for parsed text)
  std::string description;     // the header's first line
  std::vector<PipelineParam> params;
  std::string launch;  // the body, lines joined, placeholders unreplaced

  const PipelineParam* find(std::string_view param) const;
  // "input, output, model, language, format" (declaration order).
  std::string param_names() const;
};

// Parses a pipeline file's text; `name` names it in errors ("NAME:LINE: problem").
// Throws oxi::Error for any grammar error.
PipelineFile parse_pipeline(std::string_view text, const std::string& name);
// Reads and parses a file. Throws oxi::Error.
PipelineFile load_pipeline_file(const std::filesystem::path& file);

// `key=value` arguments into a map. Throws oxi::Error for an argument without '=', an empty
// key or a key given twice.
std::map<std::string, std::string> parse_assignments(const std::vector<std::string>& args);

// The launch description with every placeholder replaced: `values` over the defaults. Throws
// oxi::Error for an unknown key (listing the valid ones) or a missing required parameter.
std::string expand_pipeline(const PipelineFile& pipeline,
                            const std::map<std::string, std::string>& values);

// Where `oxinfer run` looks, in order: $OXINFER_PIPELINES_DIR (':'-separated), the source
// tree's pipelines/ and the installed datadir/oxinfer/pipelines (both fixed at build time).
// Directories that do not exist are left out.
std::vector<std::filesystem::path> pipeline_search_dirs();

// NAME.pipeline from the first directory that has it (NAME may also be a path to a file).
// Throws oxi::Error listing the pipelines there are.
std::filesystem::path find_pipeline(const std::string& name,
                                    const std::vector<std::filesystem::path>& dirs);

// Every pipeline in `dirs`, by name; a name in an earlier directory hides later ones. Throws
// oxi::Error for a file that does not parse.
std::vector<PipelineFile> list_pipelines(const std::vector<std::filesystem::path>& dirs);

}  // namespace oxi::cli
