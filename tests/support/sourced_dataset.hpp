#pragma once
// A dataset whose ring's host memory comes from a host_memory_source, as the Python worker
// processes' shared arena gives it: another dataset's samples, read as that one reads them.

#include <cstddef>
#include <memory>
#include <utility>

#include "gpufeed/detail/adapted_dataset.hpp"

namespace gpufeed::test {

class sourced_dataset final : public gpufeed::detail::adapted_dataset {
 public:
  sourced_dataset(std::shared_ptr<gpufeed::dataset const> data,
                  std::shared_ptr<gpufeed::detail::host_memory_source> source)
      : data_{std::move(data)}, source_{std::move(source)} {}

  [[nodiscard]] std::size_t size() const override { return data_->size(); }
  [[nodiscard]] gpufeed::sample_spec spec() const override { return data_->spec(); }
  void read(std::size_t index, gpufeed::sample_view out,
            gpufeed::read_context const& ctx) const override {
    data_->read(index, out, ctx);
  }
  [[nodiscard]] std::shared_ptr<gpufeed::detail::host_memory_source> host_memory() const override {
    return source_;
  }

 private:
  std::shared_ptr<gpufeed::dataset const> data_;
  std::shared_ptr<gpufeed::detail::host_memory_source> source_;
};

}  // namespace gpufeed::test
