// Repacking loaded matrices for the CPU kernels (weight_repack.h).
#include "lib/formats/weight_repack.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <string_view>
#include <tuple>
#include <vector>

#include "kernels/formats/quant.h"
#include "lib/formats/mapped_file.h"

namespace oxi::formats {
namespace {

// OXI_REPACK=rows: only the layouts of single rows (q4_K_r8 where q4_K_r8s would be taken), to
// compare the two in one binary.
bool row_sets_enabled() {
  const char* v = std::getenv("OXI_REPACK");
  return v == nullptr || std::string_view(v) != "rows";
}

// The heap copy (WeightCopies::bytes) holding [p, p + bytes), for repacking in place.
std::byte* owned_copy(formats::WeightCopies& copies, const void* p, size_t bytes) {
  const auto* b = static_cast<const std::byte*>(p);
  for (std::vector<std::byte>& v : copies.bytes) {
    if (b >= v.data() && b + bytes <= v.data() + v.size()) return v.data() + (b - v.data());
  }
  return nullptr;
}

// Rewrites m's rows as `to` in place (m views one of the loader's own copies).
void repack_in_place(std::byte* own, const backends::WeightMatrix& m, kernels::DType to) {
  if (to == m.dtype) return;  // a plain copy (repack_for_cpu): nothing to rearrange
  // a row at a time, or a set of rows (q4_K_r8s)
  const size_t granule = kernels::row_granule(to, m.cols);
  std::vector<std::byte> rows(granule * m.row_bytes);
  for (size_t r = 0; r < m.rows; r += granule) {
    std::byte* at = own + r * m.row_bytes;
    std::memcpy(rows.data(), at, rows.size());
    kernels::repack_rows(m.dtype, to, rows.data(), at, granule, m.cols);
  }
}

// Writes m's rows as `to` at dst, dense (row_bytes(to, cols) apart). Rows in the mapped file are
// read with MappedFile::copy_out, and their mapped pages released afterwards: a repack reads
// every byte once, and pages read through the mapping (or mapped anyway by the kernel's
// fault-around: 70 MB of a 620 MB TinyLlama-shaped Q4_0 file, large folios next to the norm
// vectors read at load) would stay resident beside the copy.
void repack_into(const backends::WeightMatrix& m, kernels::DType to, std::byte* dst,
                 const MappedFile* mapping) {
  const size_t dense = kernels::row_bytes(to, m.cols), total = m.rows * m.row_bytes;
  const auto* src = static_cast<const std::byte*>(m.data);
  const std::span<const std::byte> file = mapping ? mapping->bytes() : std::span<const std::byte>{};
  const bool in_file = src >= file.data() && src + total <= file.data() + file.size();
  const auto read = [&](const std::byte* from, size_t bytes, std::byte* to_buffer) {
    if (in_file)
      mapping->copy_out(static_cast<size_t>(from - file.data()), bytes, to_buffer);
    else
      std::memcpy(to_buffer, from, bytes);
  };
  if (m.row_bytes == dense) {
    read(src, total, dst);  // one read, then repacked where it landed
    repack_in_place(dst, m, to);
  } else {
    // rows apart in the file: gathered dense a row (or a set of rows) at a time
    const size_t granule = kernels::row_granule(to, m.cols);
    std::vector<std::byte> rows(granule * dense), row(m.row_bytes);
    for (size_t r = 0; r < m.rows; r += granule) {
      for (size_t i = 0; i < granule; ++i) {
        read(src + (r + i) * m.row_bytes, m.row_bytes, row.data());
        std::memcpy(rows.data() + i * dense, row.data(), dense);
      }
      if (to == m.dtype)
        std::memcpy(dst + r * dense, rows.data(), rows.size());
      else
        kernels::repack_rows(m.dtype, to, rows.data(), dst + r * dense, granule, m.cols);
    }
  }
  if (in_file) mapping->release_pages(static_cast<size_t>(src - file.data()), total);
}

}  // namespace

bool repack_enabled() {
  const char* v = std::getenv("OXI_REPACK");
  return v == nullptr || std::string_view(v) != "0";
}

// Copies of matrices in the file share one buffer, 2 MiB aligned and advised for transparent
// huge pages: on the development VM, first-touching 582 MB of 4 KiB pages took 1.8-2.4 s and
// reading the file into them 1.0 s more, against 0.07 s each with huge pages (and decode's
// matvec streams the weights with fewer TLB misses).
void repack_for_cpu(std::span<backends::WeightMatrix* const> multiplied,
                    backends::WeightMatrix* lookup_only, WeightCopies& copies,
                    RepackedBytes& repacked, const MappedFile* mapping) {
  if (!repack_enabled()) return;
  const kernels::FormatKernels& kernels = kernels::format_kernels();
  std::vector<backends::WeightMatrix*> all(multiplied.begin(), multiplied.end());
  if (lookup_only != nullptr) all.push_back(lookup_only);  // only when tied: it then has a key
  // Views of the same rows (tied embeddings) share one repacked copy: the first view of each key
  // is repacked, at `offset` in the shared buffer (or in place: npos).
  using Key = std::tuple<const void*, size_t, size_t>;
  struct Job {
    backends::WeightMatrix* first;
    kernels::DType to;
    size_t offset;
  };
  constexpr size_t npos = ~size_t{0};
  std::map<Key, Job> jobs;
  size_t total = 0;
  const auto add = [&](backends::WeightMatrix* m, kernels::DType to) {
    const Key key{m->data, m->rows, m->row_bytes};
    if (m->data == nullptr || jobs.contains(key)) return;
    const bool own = owned_copy(copies, m->data, m->rows * m->row_bytes) != nullptr;
    if (own && to == m->dtype) return;  // already an owned copy in its layout
    jobs.emplace(key, Job{m, to, own ? npos : total});
    if (!own) total += (m->rows * kernels::row_bytes(to, m->cols) + 63) / 64 * 64;
  };
  for (backends::WeightMatrix* m : all) {
    const kernels::DType to = row_sets_enabled()
                                  ? kernels.preferred_layout(m->dtype, m->rows, m->cols)
                                  : kernels.preferred_layout(m->dtype);
    if (to == m->dtype) continue;
    if (m == lookup_only) continue;  // not tied to a repacked multiplied matrix: lookups only
    add(m, to);
  }
  if (jobs.empty()) return;
  // Once some matrices are copied out of the mapped file, the others the forward pass multiplies
  // are copied too (as they are): a matrix still read through the mapping lets the kernel's
  // fault-around map the released pages of its copied neighbours back in (a TinyLlama-shaped
  // Q4_K_M file, whose q6_K matrices sit between repacked q4_K ones: 12 MB more resident than the
  // plain layout). Without a mapping no pages are released, and nothing gains from a copy.
  if (total > 0 && mapping != nullptr) {
    for (backends::WeightMatrix* m : all) {
      if (m != lookup_only && kernels.preferred_layout(m->dtype) == m->dtype) add(m, m->dtype);
    }
  }
  if (total > 0) {
    repacked.bytes.reset(static_cast<std::byte*>(
        ::operator new[](total, std::align_val_t{RepackedBytes::kAlignment})));
    ::madvise(repacked.bytes.get(), total, MADV_HUGEPAGE);  // a hint: ignored where unsupported
  }
  std::map<Key, backends::WeightMatrix> done;
  for (auto& [key, job] : jobs) {
    backends::WeightMatrix r = *job.first;
    r.dtype = job.to;
    if (job.offset == npos) {
      repack_in_place(owned_copy(copies, r.data, r.rows * r.row_bytes), *job.first, job.to);
    } else {
      repack_into(*job.first, job.to, repacked.bytes.get() + job.offset, mapping);
      r.data = repacked.bytes.get() + job.offset;
      r.row_bytes = kernels::row_bytes(job.to, r.cols);
    }
    done.emplace(key, r);
  }
  for (backends::WeightMatrix* m : all) {
    if (auto it = done.find(Key{m->data, m->rows, m->row_bytes}); it != done.end()) *m = it->second;
  }
}

}  // namespace oxi::formats
