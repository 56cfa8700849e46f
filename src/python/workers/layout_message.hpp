#pragma once
// The layout a sample gives, as it crosses between processes: the batch fields (sample_spec),
// what each leaf is (array or text), and the sample's structure as Python pickles it (its
// namedtuple and mapping types by reference, as torch's workers send batches).

#include <string>
#include <vector>

#include "gpufeed/sample_spec.hpp"
#include "python/samples/sample_tree.hpp"
#include "python/workers/mailbox.hpp"

namespace gpufeed::python::workers {

struct sample_layout_message {
  sample_spec spec;
  std::vector<sample_tree::leaf_kind> kinds;  // per field
  std::string structure;                      // pickle.dumps(sample_tree::describe())
};

void put_layout(payload_writer& out, sample_layout_message const& layout);
/// @throws std::runtime_error when the record is cut short or names an unknown dtype.
[[nodiscard]] sample_layout_message get_layout(payload_reader& in);

}  // namespace gpufeed::python::workers
