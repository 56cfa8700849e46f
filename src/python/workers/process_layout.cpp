// What the Python side asks of a process_dataset's layout: the spec, the pickled structure,
// which fields hold text and their values.
#include <stdexcept>
#include <string>

#include "python/workers/process_dataset.hpp"
#include "python/workers/text_values.hpp"

namespace gpufeed::python::workers {

sample_spec process_dataset::spec() const {
  if (collate_) {
    // The slots only carry the batches: one byte per sample, which nothing reads.
    return sample_spec{}.add("collated", dtype::u8, {1});
  }
  std::lock_guard const lock{layout_mutex_};
  if (!layout_) throw logic_error{"gpufeed: the layout comes from the first sample read"};
  return layout_->spec;
}

std::string process_dataset::structure() const {
  std::lock_guard const lock{layout_mutex_};
  return layout_ ? layout_->structure : std::string{};
}

std::size_t process_dataset::texts_kept() const {
  std::lock_guard const lock{layout_mutex_};
  std::size_t n = 0;
  for (auto const& t : texts_) {
    if (t) n += t->size();
  }
  return n;
}

py::list process_dataset::texts(batch const& b, std::size_t field) const {
  text_values* values = nullptr;
  {
    std::lock_guard const lock{layout_mutex_};
    if (field < texts_.size()) values = texts_[field].get();
  }
  if (values == nullptr) {
    throw std::invalid_argument{"texts: field " + std::to_string(field) +
                                " of the batch does not hold str or bytes"};
  }
  auto const view = b.host_field(field);
  return values->values({static_cast<std::int64_t const*>(view.data()), b.size()});
}

}  // namespace gpufeed::python::workers
