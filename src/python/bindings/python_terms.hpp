#pragma once
// gpufeed's messages name the C++ options (`loader_options::timeout`, `placement::cuda`); a
// Python user sets the DataLoader's arguments instead. Exceptions raised to Python carry the
// message in those words.

#include <string>
#include <string_view>

namespace gpufeed::python {

/// `message` with each `loader_options::NAME` as the DataLoader's argument (`NAME`, or its
/// Python name where it differs: `workers` is `num_workers`, `target` is `device`),
/// `loader_options::NAME = V` as `NAME=V`, `placement::cuda` / `placement::host` /
/// `gpufeed::auto_depth` as `'cuda'` / `None` / `'auto'`, `staging_memory::pinned` /
/// `staging_memory::pageable` as `'pinned'` / `'pageable'`, `stats::NAME()` as
/// `loader.stats()['NAME']`, `sample_error::failures()` as `SampleError.failures`, and without
/// the source location a failed precondition appends.
std::string in_python_terms(std::string_view message);

}  // namespace gpufeed::python
