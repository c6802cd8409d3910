// The CPU backend: kernels from kernels/ run on a oneTBB task arena of its own.
#pragma once

#include <memory>

#include "backends/backend.h"

namespace oxi::backends {

// threads: worker threads of the backend's arena; 0 = every core this process may use.
// Different backends have separate arenas, so two models can run side by side with their own
// thread counts.
std::unique_ptr<Backend> make_cpu_backend(int threads = 0);

}  // namespace oxi::backends
