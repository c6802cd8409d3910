// The CPU backend: kernels from kernels/ run on a oneTBB task arena of its own.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "kernels/formats/dtype.h"

namespace oxi::backends {

// threads: worker threads of the backend's arena; 0 = every core this process may use.
// Different backends have separate arenas, so two models can run side by side with their own
// thread counts.
std::unique_ptr<Backend> make_cpu_backend(int threads = 0);

// How this process's one-token products of `weights` (a weight type as the backend holds it,
// e.g. Q4_K_R8) stream (kernels::stream_lines of its layout, prefetch.h): with line requests or
// on page starts alone, and how that was chosen: "environment" (OXI_STREAM_LINES=1 or 0),
// "calibrated" (a CPU backend timed both on its first decode steps: stream_calibration.h),
// "calibrating" (not yet) or "fixed" (the selected kernels have no choice for this type).
struct MatvecStreaming {
  bool lines = true;
  const char* how = "fixed";
};
MatvecStreaming matvec_streaming(kernels::DType weights);

}  // namespace oxi::backends
