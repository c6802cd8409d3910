#pragma once

namespace oxi {

// Asks the C library to give freed heap memory back to the system (glibc keeps it by default,
// in every thread's arena). For a long-running process whose streams idle between bursts of
// work, such as live transcription. Does nothing where the C library offers no such call.
void return_free_memory() noexcept;

}  // namespace oxi
