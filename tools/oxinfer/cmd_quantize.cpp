// oxinfer quantize [options] IN.gguf [OUT.gguf] TYPE [THREADS]: a GGUF model re-encoded in a
// llama.cpp file type (Q4_K_M, Q8_0, ...), as llama-quantize does it and with its arguments
// (lib/llm/quantize.h). One line per tensor as it is written, then the sizes.
#include <cstdio>
#include <filesystem>
#include <string>

#include "kernels/formats/dtype.h"
#include "kernels/formats/quant.h"
#include "lib/core/error.h"
#include "lib/formats/gguf.h"
#include "lib/llm/quantize.h"
#include "tools/oxinfer/args.h"
#include "tools/oxinfer/commands.h"

namespace oxi::cli {
namespace {

std::string type_list() {
  std::string list;
  for (const llm::QuantizeFileType& t : llm::quantize_file_types()) {
    char line[160];
    std::snprintf(line, sizeof line, "  %2u  or  %-7s: %.*s\n", t.id, std::string(t.name).c_str(),
                  static_cast<int>(t.description.size()), t.description.data());
    list += line;
  }
  return list;
}

kernels::DType tensor_type_option(const ParsedArgs& args, const std::string& name) {
  const std::string value = *args.get(name);
  const auto t = kernels::parse_dtype(value);
  if (!t || !kernels::row_encoder(*t))
    throw UsageError("--" + name + " " + value + ": not a type this build can encode");
  return *t;
}

double mib(size_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

void print_tensor(size_t index, size_t count, const llm::QuantizedTensor& q) {
  std::string shape;
  for (size_t d = q.shape.size(); d-- > 0;)  // ggml's order, innermost first
    shape.append(shape.empty() ? "" : ", ").append(std::to_string(q.shape[d]));
  std::printf("[%4zu/%4zu] %36s - [%s], type = %6s, ", index, count, q.name.c_str(), shape.c_str(),
              std::string(kernels::name(q.from)).c_str());
  if (q.to == q.from)
    std::printf("size = %8.3f MiB\n", mib(q.bytes_in));
  else
    std::printf("converting to %s .. size = %8.2f MiB -> %8.2f MiB\n",
                std::string(kernels::name(q.to)).c_str(), mib(q.bytes_in), mib(q.bytes_out));
  std::fflush(stdout);
}

}  // namespace

int run_quantize(const Argv& argv) {
  ArgParser p("quantize", "oxinfer quantize [options] IN.gguf [OUT.gguf] TYPE [THREADS]",
              "Re-encode a GGUF model's matrices in a llama.cpp file type, as llama-quantize:\n"
              "the K-quant mixes give output.weight and some attn_v / ffn_down layers more "
              "bits;\nnorms stay as they are; the metadata is copied. OUT defaults to\n"
              "ggml-model-TYPE.gguf beside IN. Types:\n" +
                  type_list());
  p.flag("allow-requantize", "re-encode tensors that are already quantized (loses precision)");
  p.flag("leave-output-tensor", "keep output.weight as it is");
  p.flag("pure", "no mix: every matrix the type's default");
  p.option("output-tensor-type", "T", "output.weight's type (q8_0, f16, ...)");
  p.option("token-embedding-type", "T", "token_embd.weight's type");
  p.option("tensor-type", "PATTERN=T",
           "tensors whose name matches the regex PATTERN get type T (repeatable; first match)");
  p.option("imatrix", "FILE",
           "an importance matrix (oxinfer imatrix, or llama-imatrix's .gguf / .dat) whose "
           "columns' weights the encoders follow");
  p.flag("dry-run", "print each tensor's type and the sizes, write nothing");
  p.threads_option();
  const ParsedArgs args = p.parse(argv);
  const std::vector<std::string>& pos = args.positional();
  // llama-quantize's reading: IN, then TYPE if the next argument is one (OUT by default), else
  // OUT and TYPE; THREADS may follow.
  if (pos.size() < 2) throw UsageError("expected IN.gguf [OUT.gguf] TYPE [THREADS] (see --help)");
  const size_t type_at = llm::lookup_quantize_file_type(pos[1]) ? 1 : 2;
  if (pos.size() <= type_at || pos.size() > type_at + 2)
    throw UsageError("expected IN.gguf [OUT.gguf] TYPE [THREADS] (see --help)");
  long long threads = args.get_int("threads", 0);
  if (pos.size() == type_at + 2) {
    const std::string& t = pos.back();
    if (t.empty() || t.size() > 4 || t.find_first_not_of("0123456789") != std::string::npos)
      throw UsageError("THREADS must be a number, not '" + t + "'");
    threads = std::stoll(t);
  }
  llm::QuantizeOptions options;
  options.type = pos[type_at];
  const llm::QuantizeFileType& type = llm::find_quantize_file_type(options.type);
  options.pure = args.flag("pure");
  options.imatrix_file = args.get_or("imatrix", "");
  options.allow_requantize = args.flag("allow-requantize");
  options.leave_output = args.flag("leave-output-tensor");
  if (args.has("output-tensor-type"))
    options.output_tensor_type = tensor_type_option(args, "output-tensor-type");
  if (args.has("token-embedding-type"))
    options.token_embedding_type = tensor_type_option(args, "token-embedding-type");
  for (const std::string& spec : args.get_all("tensor-type")) {
    const size_t eq = spec.find('=');
    const auto t =
        eq == std::string::npos ? std::nullopt : kernels::parse_dtype(spec.substr(eq + 1));
    if (eq == 0 || !t || !kernels::row_encoder(*t))
      throw UsageError("--tensor-type " + spec +
                       ": expected PATTERN=TYPE with a type this build can encode");
    options.tensor_types.emplace_back(spec.substr(0, eq), *t);
  }
  if (threads < 0 || threads > 4096) throw UsageError("--threads must be 0..4096");
  options.threads = static_cast<int>(threads);
  const std::filesystem::path in = pos[0];
  const std::filesystem::path out =
      type_at == 2 ? std::filesystem::path(pos[1])
                   : in.parent_path() / ("ggml-model-" + std::string(type.name) + ".gguf");

  llm::QuantizePlan plan;
  if (args.flag("dry-run")) {
    plan = llm::plan_quantization(gguf::Reader(in), options);
    for (size_t i = 0; i < plan.tensors.size(); ++i)
      print_tensor(i + 1, plan.tensors.size(), plan.tensors[i]);
  } else {
    std::printf("quantizing '%s' to '%s' as %s\n", in.string().c_str(), out.string().c_str(),
                std::string(type.name).c_str());
    plan = llm::quantize_model(in, out, options,
                               [](const llm::QuantizedTensor& q, size_t index, size_t count) {
                                 print_tensor(index + 1, count, q);
                               });
  }
  std::printf("model size  = %8.2f MiB\nquant size  = %8.2f MiB\n", mib(plan.bytes_in),
              mib(plan.bytes_out));
  return 0;
}

}  // namespace oxi::cli
