#include "gpufeed/detail/adapted_dataset.hpp"

#include <string>
#include <typeinfo>

#include "gpufeed/error.hpp"

namespace gpufeed::detail {

void adapted_dataset::read_each(std::span<sample_read> reads) const {
  for (auto& r : reads) {
    try {
      read(r.index, r.out, r.context);
    } catch (worker_error const&) {
      throw;  // not the sample's failure: the loader stops
    } catch (...) {
      r.failure = std::current_exception();
    }
  }
}

std::unique_ptr<staged_sample> adapted_dataset::stage(std::size_t index,
                                                      read_context const&) const {
  throw logic_error{"a " + std::string{typeid(*this).name()} +
                    " says layout_from_first_sample() but does not override stage(); sample " +
                    std::to_string(index) + " cannot be read before the layout is known"};
}

void adapted_dataset::layout_chosen(staged_sample const&) const {}

}  // namespace gpufeed::detail
