#include "gpufeed/batch.hpp"

#include <string>
#include <utility>

#include "core/device/device_layout.hpp"
#include "core/ring/lease.hpp"
#include "gpufeed/detail/slot_layout.hpp"
#include "gpufeed/error.hpp"

namespace gpufeed {

namespace {
constexpr char const* empty_batch = "this batch is empty (moved from or released)";
}  // namespace

batch::batch(batch&& other) noexcept
    : owner_{std::move(other.owner_)}, lease_{std::exchange(other.lease_, nullptr)} {}

batch& batch::operator=(batch&& other) noexcept {
  if (this != &other) {
    release();
    owner_ = std::move(other.owner_);
    lease_ = std::exchange(other.lease_, nullptr);
  }
  return *this;
}

batch::~batch() {
  release();
}

void batch::release() noexcept {
  if (lease_ != nullptr) {
    owner_->release(*std::exchange(lease_, nullptr));
  }
  owner_.reset();
}

void batch::use_on(stream_view stream) {
  GPUFEED_EXPECTS(lease_ != nullptr, std::string{"use_on: "} + empty_batch);
  owner_->use_on(*lease_, stream);
}

std::size_t batch::size() const noexcept {
  return lease_ ? lease_->size : 0;
}
std::uint64_t batch::sequence() const noexcept {
  return lease_ ? lease_->sequence : 0;
}
std::uint64_t batch::epoch() const noexcept {
  return lease_ ? lease_->epoch : 0;
}
step_info batch::step() const noexcept {
  return lease_ ? lease_->step : step_info{};
}

std::size_t batch::fields() const noexcept {
  return lease_ ? owner_->host_layout().spec().size() : 0;
}

tensor_view batch::host_field(std::size_t f) const {
  GPUFEED_EXPECTS(lease_ != nullptr, empty_batch);
  auto const& layout = owner_->host_layout();
  GPUFEED_EXPECTS(f < layout.spec().size(), "field " + std::to_string(f) +
                                                " does not exist; the batch has " +
                                                std::to_string(layout.spec().size()) + " fields");
  auto const& fld = layout.spec()[f];
  return tensor_view{fld.name,     fld.type,  layout.locate(lease_->host, f, 0),
                     lease_->size, fld.shape, -1};
}

tensor_view batch::field(std::size_t f) const {
  auto const* out_layout = lease_ != nullptr ? owner_->output_layout() : nullptr;
  if (out_layout == nullptr) {
    return host_field(f);
  }
  auto const host = host_field(f);  // checks f
  auto const& out = out_layout->field(f);
  return tensor_view{host.name(),  out.type,  lease_->device + out.device_offset,
                     lease_->size, out.shape, owner_->device()};
}

tensor_view batch::field(std::string_view name) const {
  GPUFEED_EXPECTS(lease_ != nullptr, empty_batch);
  auto const& spec = owner_->host_layout().spec();
  auto const f = spec.find(name);
  GPUFEED_EXPECTS(f.has_value(),
                  "no field named '" + std::string{name} + "'; the batch has " + spec.to_string());
  return field(*f);
}

std::span<std::size_t const> batch::indices() const noexcept {
  if (lease_ == nullptr) {
    return {};
  }
  return {lease_->indices, lease_->size};
}

std::span<std::size_t const> batch::skipped() const noexcept {
  if (lease_ == nullptr) {
    return {};
  }
  return lease_->skipped;
}

}  // namespace gpufeed
